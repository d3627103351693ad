// File: layer_times_json.cpp
// load_layer_profile_json: a per-layer profile JSON (micro-batch -> tp -> layer index ->
// [forward_s, backward_s, ...]) as measured layer times by layer kind (layer_times.h).
#include <stdexcept>
#include <string>

#include "whale/plan/error.h"
#include "whale/plan/layer_times.h"
#include "whale/plan/model.h"
#include "yaml_reader.h"

namespace whale::plan {
namespace {

/// A key of the JSON read as a number (micro-batch, tp or layer index), > 0 (>= 0 when
/// `zero_allowed`); fails naming `field` when it is not.
double key_number(const YamlField& field, const std::string& key, const std::string& what,
                  bool zero_allowed = false) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(key, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != key.size() || !(zero_allowed ? value >= 0 : value > 0)) field.fail("expected a " + what + " as the key, got '" + key + "'");
  return value;
}

/// The measurements of one (micro-batch, tp): one per layer kind.
void read_layers(const YamlField& layers, double micro_batch, int tp, LayerTimes* out) {
  const std::vector<std::string> keys = layers.keys();
  const int n = static_cast<int>(keys.size());
  if (n < 3) layers.fail("expected at least three layers (0 the embedding, the last the head), got " + std::to_string(n));
  std::vector<Seconds> forward(n), backward(n);
  std::vector<bool> seen(n, false);
  for (const std::string& key : keys) {
    const YamlField entry = layers.get(key);
    const double index = key_number(layers, key, "layer index 0.." + std::to_string(n - 1), true);
    const int i = static_cast<int>(index);
    if (i != index || i >= n || seen[i]) layers.fail("expected layer indices 0.." + std::to_string(n - 1) + " once each, got '" + key + "'");
    seen[i] = true;
    const std::vector<YamlField> times = entry.elements();
    if (times.size() < 2) entry.fail("expected a list [forward_s, backward_s, ...]");
    forward[i] = times[0].positive_number();
    backward[i] = times[1].positive_number();
  }
  add_indexed_layer_times(forward, backward, micro_batch, tp, out);
}

}  // namespace

LayerTimes load_layer_profile_json(const std::string& path) {
  const YamlField root = load_yaml_file(path);
  LayerTimes out;
  out.source = path;
  for (const std::string& mb_key : root.keys()) {
    const double micro_batch = key_number(root, mb_key, "micro-batch (samples per device)");
    const YamlField by_tp = root.get(mb_key);
    for (const std::string& tp_key : by_tp.keys()) {
      const double tp = key_number(by_tp, tp_key, "tensor-parallel degree");
      if (tp != static_cast<int>(tp)) by_tp.fail("expected an integer tensor-parallel degree as the key, got '" + tp_key + "'");
      read_layers(by_tp.get(tp_key), micro_batch, static_cast<int>(tp), &out);
    }
  }
  if (out.empty()) root.fail("expected a mapping of micro-batch to tp to layer index, got no measurements");
  return out;
}

}  // namespace whale::plan

// File: torch_trace_layer_times.cpp
// load_torch_trace_layer_times: per-layer forward and backward times from a PyTorch profiler
// Chrome trace, by record_function ranges or nn.Module ranges, with the backward found through
// the autograd sequence numbers (layer_times_import.h, docs/layer-times.md).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chrome_trace_events.h"
#include "whale/plan/error.h"
#include "whale/plan/layer_times_import.h"
#include "whale/plan/model.h"

namespace whale::plan {
namespace {

constexpr double kSecondsPerUs = 1e-6;
const std::string kModulePrefix = "nn.Module: ";

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

/// A range that names a layer: its key ("3" for "layer.3.forward", "GPTBlock_3" for a module)
/// and whether it is a forward (else a backward) range.
struct LayerRange {
  std::string key;
  bool forward = true;
  const TraceEvent* event = nullptr;
};

/// "layer.<i>.forward" or "layer.<i>.backward".
bool parse_annotation(const TraceEvent& e, LayerRange* out) {
  if (e.name.rfind("layer.", 0) != 0) return false;
  const std::string rest = e.name.substr(6);
  for (const bool forward : {true, false}) {
    const std::string tail = forward ? ".forward" : ".backward";
    if (!ends_with(rest, tail)) continue;
    const std::string index = rest.substr(0, rest.size() - tail.size());
    if (!all_digits(index) || index.size() > 6) return false;
    *out = {std::to_string(std::stoi(index)), forward, &e};
    return true;
  }
  return false;
}

/// "nn.Module: <Class>_<k>" of a class whose name ends in "Block" or "Layer".
bool parse_module(const TraceEvent& e, LayerRange* out) {
  if (e.name.rfind(kModulePrefix, 0) != 0) return false;
  const std::string instance = e.name.substr(kModulePrefix.size());
  const std::size_t underscore = instance.rfind('_');
  if (underscore == std::string::npos || !all_digits(instance.substr(underscore + 1))) return false;
  const std::string cls = instance.substr(0, underscore);
  if (!ends_with(cls, "Block") && !ends_with(cls, "Layer")) return false;
  *out = {instance, true, &e};
  return true;
}

/// The ranges of one convention: record_function annotations where there are any, else the
/// outermost transformer-block modules.
std::vector<LayerRange> layer_ranges(const ChromeTrace& trace, bool* annotated) {
  std::vector<LayerRange> annotations, modules;
  std::map<std::string, double> module_end_by_lane;  // the end of the last kept module per lane
  for (const TraceEvent& e : trace.events) {
    LayerRange r;
    if (parse_annotation(e, &r)) annotations.push_back(r);
    if (parse_module(e, &r)) {
      double& end = module_end_by_lane[e.lane];
      if (e.start_us >= end) {  // events come enclosing-first: a nested block is skipped
        modules.push_back(r);
        end = e.end_us;
      }
    }
  }
  *annotated = !annotations.empty();
  return *annotated ? annotations : modules;
}

/// The backward time of one occurrence of a forward range: the outermost autograd-engine ops of
/// its process whose sequence number is that of a forward op inside it; 0 when none is linked.
double linked_backward_us(const ChromeTrace& trace, const TraceEvent& range,
                          const std::map<std::pair<std::string, long long>, std::vector<const TraceEvent*>>& backward) {
  std::set<const TraceEvent*> linked;
  for (const TraceEvent* op : trace.within(range.lane, range.start_us, range.end_us)) {
    if (op->sequence < 0 || op->autograd_backward) continue;
    const auto it = backward.find({range.pid, op->sequence});
    if (it != backward.end()) linked.insert(it->second.begin(), it->second.end());
  }
  std::vector<const TraceEvent*> ops(linked.begin(), linked.end());
  std::sort(ops.begin(), ops.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->lane != b->lane) return a->lane < b->lane;
    if (a->start_us != b->start_us) return a->start_us < b->start_us;
    return a->end_us > b->end_us;
  });
  double total_us = 0;
  std::string lane;
  double end_us = 0;
  for (const TraceEvent* op : ops) {
    if (op->lane == lane && op->start_us < end_us) continue;  // inside one already counted
    lane = op->lane;
    end_us = op->end_us;
    total_us += trace.measured_us(op->lane, op->start_us, op->end_us);
  }
  return total_us;
}

/// Times of one layer over its occurrences, in microseconds.
struct LayerSamples {
  std::vector<double> forward_us;
  std::vector<double> linked_backward_us;
  std::vector<double> range_backward_us;
};

/// The annotated layers must be 0..n-1, n >= 3, as a family model's (layer_times.h).
void check_layer_indices(const std::string& path, const std::map<std::string, LayerSamples>& samples) {
  const int n = static_cast<int>(samples.size());
  if (n < 3) {
    throw Error(path, "traceEvents", "ranges of at least three layers (layer.0 the embedding, the last the head), "
                "got " + std::to_string(n), "number the layers as the model's: the embedding 0, the blocks 1..L, "
                "the head L+1");
  }
  for (int i = 0; i < n; ++i) {
    if (samples.count(std::to_string(i)) == 0) {
      throw Error(path, "layer." + std::to_string(i), "ranges layer.0 .. layer." + std::to_string(n - 1) + " for " +
                  std::to_string(n) + " layers, got none for layer." + std::to_string(i),
                  "number the layers as the model's: the embedding 0, the blocks 1..L, the head L+1");
    }
  }
}

Seconds median_us_as_seconds(const std::vector<double>& us) { return median_seconds(us) * kSecondsPerUs; }

}  // namespace

LayerTimes load_torch_trace_layer_times(const std::string& path, double micro_batch, int tp) {
  const ChromeTrace trace = load_chrome_trace(path);
  bool annotated = false;
  const std::vector<LayerRange> ranges = layer_ranges(trace, &annotated);
  if (ranges.empty()) {
    throw Error(path, "traceEvents", "record_function ranges named 'layer.<i>.forward', or nn.Module ranges of "
                "classes ending in 'Block' or 'Layer', got none",
                "wrap each layer's forward in torch.profiler.record_function(f'layer.{i}.forward'), or profile "
                "with with_stack=True (docs/layer-times.md)");
  }
  std::map<std::pair<std::string, long long>, std::vector<const TraceEvent*>> backward;  // by (pid, sequence)
  for (const TraceEvent& e : trace.events) {
    if (e.autograd_backward && e.sequence >= 0) backward[{e.pid, e.sequence}].push_back(&e);
  }
  std::map<std::string, LayerSamples> samples;
  for (const LayerRange& r : ranges) {
    LayerSamples& s = samples[r.key];
    const TraceEvent& e = *r.event;
    const double measured = trace.measured_us(e.lane, e.start_us, e.end_us);
    if (!r.forward) {
      s.range_backward_us.push_back(measured);
      continue;
    }
    s.forward_us.push_back(measured);
    const double linked = linked_backward_us(trace, e, backward);
    if (linked > 0) s.linked_backward_us.push_back(linked);
  }
  if (annotated) check_layer_indices(path, samples);
  std::map<std::string, std::pair<Seconds, Seconds>> times;  // forward_s, backward_s by layer key
  for (const auto& [key, s] : samples) {
    const std::string layer = annotated ? "layer." + key : kModulePrefix + key;
    if (s.forward_us.empty()) {
      throw Error(path, layer, "a forward range for every layer with a backward one, got none",
                  "name the forward range " + layer + ".forward");
    }
    const std::vector<double>& back = s.linked_backward_us.empty() ? s.range_backward_us : s.linked_backward_us;
    if (back.empty()) {
      throw Error(path, layer, "a backward time: autograd ops linked to the layer's forward ops (args 'Sequence "
                  "number' and 'Fwd thread id'), or a '" + (annotated ? layer + ".backward" : layer) + "' range",
                  "profile the backward pass too (loss.backward() inside the profiler)");
    }
    const Seconds forward_s = median_us_as_seconds(s.forward_us);
    const Seconds backward_s = median_us_as_seconds(back);
    if (!(forward_s > 0) || !(backward_s > 0)) {
      throw Error(path, layer, "forward and backward times > 0, got " + std::to_string(forward_s) + " s and " +
                  std::to_string(backward_s) + " s", "a zero-length range measures nothing");
    }
    times[key] = {forward_s, backward_s};
  }
  LayerTimes out;
  out.source = path;
  if (annotated) {
    const int n = static_cast<int>(times.size());
    std::vector<Seconds> forward, back;
    for (int i = 0; i < n; ++i) {
      forward.push_back(times.at(std::to_string(i)).first);
      back.push_back(times.at(std::to_string(i)).second);
    }
    add_indexed_layer_times(forward, back, micro_batch, tp, &out);
    return out;
  }
  std::vector<Seconds> forward, back;
  for (const auto& [key, t] : times) {
    forward.push_back(t.first);
    back.push_back(t.second);
  }
  MeasuredLayerTime m;
  m.kind = LayerKind::transformer;
  m.tp = tp;
  m.micro_batch = micro_batch;
  m.forward_s = median_seconds(forward);
  m.backward_s = median_seconds(back);
  out.measurements.push_back(m);
  return out;
}

}  // namespace whale::plan

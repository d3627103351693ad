// File: hints.cpp
// Loading and checking planner hints (docs/hints.md), and testing stages against them.
#include "whale/plan/hints.h"

#include <algorithm>
#include <set>

#include "whale/plan/error.h"
#include "whale/plan/node_members.h"
#include "yaml_reader.h"

namespace whale::plan {
namespace {

std::string range_text(int first, int last) {
  return std::to_string(first) + "-" + std::to_string(last);
}

bool power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

LayerHint read_layer_hint(const YamlField& f, int index) {
  f.expect_keys({"range", "tp", "dp"});
  LayerHint h;
  h.yaml_path = "layers[" + std::to_string(index) + "]";
  const YamlField range = f.get("range");
  const auto ends = range.elements();
  if (ends.size() != 2) range.fail("expected [first, last] (inclusive layer indices)");
  h.first = ends[0].non_negative_integer();
  h.last = ends[1].non_negative_integer();
  if (h.last < h.first) range.fail("expected first <= last, got [" + range_text(h.first, h.last) + "]");
  if (f.has("tp")) h.tp = f.get("tp").positive_integer();
  if (f.has("dp")) h.dp = f.get("dp").positive_integer();
  if (h.tp == 0 && h.dp == 0) f.fail("expected tp (split) or dp (replicate)", "see docs/hints.md");
  return h;
}

}  // namespace

Hints load_hints(const std::string& path) {
  const YamlField root = load_yaml_file(path);
  root.expect_keys({"layers", "stage_boundaries", "schedules", "max_pipeline_depth", "exclude_devices"});
  Hints h;
  h.source_file = path;
  if (root.has("layers")) {
    const auto items = root.get("layers").elements();
    for (size_t i = 0; i < items.size(); ++i) h.layers.push_back(read_layer_hint(items[i], static_cast<int>(i)));
  }
  if (root.has("stage_boundaries")) {
    for (const YamlField& e : root.get("stage_boundaries").elements()) h.stage_boundaries.push_back(e.non_negative_integer());
  }
  if (root.has("schedules")) {
    for (const YamlField& e : root.get("schedules").elements()) {
      ScheduleKind k;
      if (!parse_schedule_kind(e.text(), &k)) e.fail("expected gpipe, 1f1b, interleaved-1f1b, wave or zb-h1, got '" + e.text() + "'");
      h.schedules.push_back(k);
    }
  }
  if (root.has("max_pipeline_depth")) h.max_pipeline_depth = root.get("max_pipeline_depth").positive_integer();
  if (root.has("exclude_devices")) {
    const YamlField f = root.get("exclude_devices");
    if (f.is_sequence()) {
      for (const YamlField& e : f.elements()) h.exclude_devices.push_back(e.non_negative_integer());
    } else {
      h.exclude_devices = parse_device_list(f.text(), path, "exclude_devices");
    }
    std::sort(h.exclude_devices.begin(), h.exclude_devices.end());
  }
  return h;
}

std::vector<int> usable_devices(const Hints& hints, const Cluster& cluster) {
  std::set<int> excluded(hints.exclude_devices.begin(), hints.exclude_devices.end());
  std::vector<int> out;
  for (const Device& d : cluster.devices) {
    if (!excluded.count(d.id)) out.push_back(d.id);
  }
  return out;
}

void check_hints(const Hints& hints, const Cluster& cluster, const Model& model) {
  const std::string& file = hints.source_file;
  const int layers = static_cast<int>(model.layers.size());
  for (int id : hints.exclude_devices) {
    if (id < 0 || id >= static_cast<int>(cluster.devices.size())) {
      throw Error(file, "exclude_devices", "device " + std::to_string(id) + " is not in the cluster",
                  "the cluster has devices 0-" + std::to_string(cluster.devices.size() - 1));
    }
  }
  const std::vector<int> usable = usable_devices(hints, cluster);
  if (usable.empty()) throw Error(file, "exclude_devices", "every device of the cluster is excluded", "leave at least one device");
  const int node_most = most_in_one_node(cluster, usable);

  for (size_t i = 0; i < hints.layers.size(); ++i) {
    const LayerHint& h = hints.layers[i];
    if (h.last >= layers) {
      throw Error(file, h.yaml_path + ".range", "layer " + std::to_string(h.last) + " does not exist",
                  "the model has layers 0-" + std::to_string(layers - 1));
    }
    if (h.tp > 0 && !power_of_two(h.tp)) {
      throw Error(file, h.yaml_path + ".tp", "tp " + std::to_string(h.tp) + " must be a power of two");
    }
    if (h.tp > 0 && !tp_splits_layers(model, h.tp)) {
      throw Error(file, h.yaml_path + ".tp", tp_split_failure(model, h.tp),
                  "a tp splits the heads, the kv_heads and the ffn_hidden width evenly and is at most the vocabulary");
    }
    if (h.tp > node_most) {
      throw Error(file, h.yaml_path + ".tp", "tp " + std::to_string(h.tp) + " needs that many devices in one node",
                  "the largest node has " + std::to_string(node_most) + " usable devices");
    }
    if (std::max(h.tp, 1) * std::max(h.dp, 1) > static_cast<int>(usable.size())) {
      throw Error(file, h.yaml_path, "tp x dp needs more devices than the " + std::to_string(usable.size()) + " usable");
    }
    for (size_t j = 0; j < i; ++j) {
      const LayerHint& o = hints.layers[j];
      if (o.last < h.first || h.last < o.first) continue;
      const bool tp_clash = h.tp && o.tp && h.tp != o.tp;
      const bool dp_clash = h.dp && o.dp && h.dp != o.dp;
      if (tp_clash || dp_clash) {
        throw Error(file, h.yaml_path, std::string(tp_clash ? "tp" : "dp") + " contradicts " + o.yaml_path +
                    " on layers " + range_text(std::max(h.first, o.first), std::min(h.last, o.last)),
                    "give overlapping layer hints the same degrees");
      }
    }
  }
  const auto& b = hints.stage_boundaries;
  if (!b.empty()) {
    if (b[0] != 0) throw Error(file, "stage_boundaries[0]", "the first stage must start at layer 0");
    for (size_t i = 1; i < b.size(); ++i) {
      if (b[i] <= b[i - 1] || b[i] >= layers) {
        throw Error(file, "stage_boundaries[" + std::to_string(i) + "]",
                    "expected ascending first layers below " + std::to_string(layers));
      }
    }
    const int stages = static_cast<int>(b.size());
    auto allowed = [&](ScheduleKind k) {
      return hints.schedules.empty() || std::count(hints.schedules.begin(), hints.schedules.end(), k) > 0;
    };
    const bool chunked = allowed(ScheduleKind::interleaved_1f1b) || allowed(ScheduleKind::wave);
    const int depth = hints.max_pipeline_depth > 0 ? hints.max_pipeline_depth : static_cast<int>(usable.size());
    bool possible = stages <= depth && (allowed(ScheduleKind::one_f_one_b) || allowed(ScheduleKind::gpipe) ||
                                      allowed(ScheduleKind::zb_h1));
    for (int v : {2, 4}) possible = possible || (chunked && stages % v == 0 && stages / v <= depth);
    if (!possible) {
      throw Error(file, "stage_boundaries", std::to_string(stages) + " stages contradict max_pipeline_depth " +
                  std::to_string(depth) + " with the allowed schedules",
                  "raise max_pipeline_depth, allow interleaved-1f1b or wave, or give fewer boundaries");
    }
  }
}

bool stages_honour(const Hints& hints, const std::vector<Stage>& stages, int* violated) {
  for (size_t i = 0; i < hints.layers.size(); ++i) {
    const LayerHint& h = hints.layers[i];
    for (const Stage& s : stages) {
      if (s.end_layer <= h.first || s.first_layer > h.last) continue;
      if ((h.tp && s.tp != h.tp) || (h.dp && s.dp() != h.dp)) {
        if (violated) *violated = static_cast<int>(i);
        return false;
      }
    }
  }
  return true;
}

bool plan_honours_hints(const Hints& hints, const Plan& plan) {
  if (!stages_honour(hints, plan.stages)) return false;
  if (hints.max_pipeline_depth > 0 && plan.pipeline_groups() > hints.max_pipeline_depth) return false;
  if (!hints.schedules.empty() &&
      std::find(hints.schedules.begin(), hints.schedules.end(), plan.schedule.kind) == hints.schedules.end())
    return false;
  if (!hints.stage_boundaries.empty()) {
    std::vector<int> firsts;
    for (const Stage& s : plan.stages) firsts.push_back(s.first_layer);
    if (firsts != hints.stage_boundaries) return false;
  }
  const std::vector<int>& excluded = hints.exclude_devices;
  for (const Stage& s : plan.stages)
    for (int d : s.devices)
      if (std::find(excluded.begin(), excluded.end(), d) != excluded.end()) return false;
  return true;
}

}  // namespace whale::plan

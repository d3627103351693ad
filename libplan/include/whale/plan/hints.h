// File: hints.h
// User hints for the planner (Whale's annotations as YAML): fixed tp/dp for a layer range
// (split/replicate), fixed stage boundaries, allowed schedules, maximum pipeline depth and
// excluded devices. The schema is docs/hints.md.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

/// Whale's split (tp) and replicate (dp) for layers [first, last] (inclusive, model layer
/// indices). 0 = free.
struct LayerHint {
  int first = 0;
  int last = 0;
  int tp = 0;
  int dp = 0;
  std::string yaml_path;   // "layers[1]", for messages
};

struct Hints {
  std::string source_file;                 // "" when built in code
  std::vector<LayerHint> layers;
  std::vector<int> stage_boundaries;       // first layer of each stage, starting with 0
  std::vector<ScheduleKind> schedules;     // allowed; empty = all
  int max_pipeline_depth = 0;              // 0 = no limit
  std::vector<int> exclude_devices;        // global device ids, ascending

  bool empty() const {
    return layers.empty() && stage_boundaries.empty() && schedules.empty() &&
           max_pipeline_depth == 0 && exclude_devices.empty();
  }
};

/// Loads a hints file (keys: layers, stage_boundaries, schedules, max_pipeline_depth,
/// exclude_devices). Throws whale::Error naming the file and field on malformed input.
Hints load_hints(const std::string& path);

/// Checks the hints against the cluster and model, and against each other: layer indices in
/// range, boundaries ascending from 0, degrees powers of two dividing the model's heads,
/// overlapping layer hints that disagree, a stage count no pipeline depth and schedule can
/// give, a degree no usable device group can hold, every device excluded. Throws whale::Error
/// naming the hint (file and yaml path) and why.
void check_hints(const Hints& hints, const Cluster& cluster, const Model& model);

/// Whether the stages of a plan honour every layer hint; on failure `violated` (if given)
/// gets the index of the first hint a stage breaks.
bool stages_honour(const Hints& hints, const std::vector<Stage>& stages, int* violated = nullptr);

/// Whether a whole plan honours the hints: its stages every layer hint, its pipeline depth
/// max_pipeline_depth, its schedule one of `schedules`, its stages' first layers
/// `stage_boundaries`, and no excluded device in it.
bool plan_honours_hints(const Hints& hints, const Plan& plan);

/// The device ids left after exclusion, ascending.
std::vector<int> usable_devices(const Hints& hints, const Cluster& cluster);

}  // namespace whale::plan

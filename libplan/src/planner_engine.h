// File: planner_engine.h
// The search engine shared by the planner, the baseline and the upper bound: analytic phase
// (bounded by structure, keeping the best estimates) then the simulator phase. Private.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "whale/plan/planner.h"
#include "whale/plan/search_layout.h"
#include "whale/plan/search_space.h"

namespace whale::plan {

struct EngineInput {
  SharedStructures structures;   // not null
  /// The choices of a structure, which must depend on it only through its depth and largest dp
  /// (asked once per pair), with micro-batch sizes that divide global_batch and give every
  /// replica a sample (StructureFigures::least_bound_s).
  std::function<std::vector<Choice>(const Structure&)> choices;
  LayoutRules rules;
  const Hints* hints = nullptr;   // layer hints every kept layout must honour
  int global_batch = 0;
  std::string phase;              // for progress reports
  int keep = 1;                   // plans to return
  long structures_left_out = 0;   // left out before the engine (holding_structures): pruned
  /// Also simulate each fitting plan with speed-proportional expert counts where an ep group
  /// mixes device models (prefer_uneven_expert_counts); off for the heterogeneity-unaware
  /// baseline.
  bool uneven_experts = false;
};

struct EngineOutput {
  std::vector<RankedPlan> ranked;  // simulated plans that fit, best first (at most keep)
  SearchStats stats;
  long choices_total = 0;          // candidates in the space
  bool any_fit = false;            // some layout fitted before the hints filter
  std::vector<long> rejected_by_hint;   // per layer hint: fitting layouts it rejected
  bool has_shortfall = false;
  Shortfall closest;               // the smallest memory gap among layouts that do not fit
  std::string closest_label;
  /// Where no candidate fits by the simulator's count: the one whose worst device is the least
  /// short (need_bytes its peak, usable_bytes its capacity).
  bool has_simulated_shortfall = false;
  Shortfall simulated_closest;
  std::string simulated_closest_label;
  long simulated_closest_order = 0;   // its enumeration order, the tie-break
};

using Clock = std::chrono::steady_clock;

/// options.clock_s() when set, else Clock::now().
inline Clock::time_point planner_now(const PlannerOptions& options) {
  if (!options.clock_s) return Clock::now();
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.clock_s())));
}

/// Lists `device` in `*idle`: in the entry of its device model and `reason`, or in a new one.
inline void add_idle_device(std::vector<IdleDevices>* idle, const Cluster& cluster, int device,
                            const std::string& reason) {
  const std::string& m = cluster.devices[device].model;
  auto it = std::find_if(idle->begin(), idle->end(),
                         [&](const IdleDevices& e) { return e.device_model == m && e.reason == reason; });
  if (it == idle->end()) it = idle->insert(idle->end(), IdleDevices{m, {}, reason});
  it->devices.push_back(device);
}

/// `options` with the time limit that started at `start` cut to what is left of it (1 ms at
/// least: 0 would mean no limit); unchanged without a limit.
inline PlannerOptions within_time_left(const PlannerOptions& options, Clock::time_point start) {
  PlannerOptions out = options;
  if (options.time_limit_s > 0) {
    const double left = options.time_limit_s - std::chrono::duration<double>(planner_now(options) - start).count();
    out.time_limit_s = left > 1e-3 ? left : 1e-3;
  }
  return out;
}

/// enumerate_structures less most structures that cannot hold the model's state
/// (structure_hold_fraction < 1), which run_engine skips: it keeps those that hold it and,
/// of the rest, each that holds more than every one before it (so the closest one, with which
/// run_engine reports a shortfall, stays). `*left_out` counts the others. Taken from
/// options.structure_cache where it holds them (computed and put there otherwise). Past
/// `deadline` the enumeration stops (enumerate_structures' `stop`): `*cut` is set and the
/// structures so far are returned, and not cached.
SharedStructures holding_structures(const Cluster& cluster, const Model& model, const SpaceLimits& limits,
                                    const PlannerOptions& options, Clock::time_point deadline, long* left_out,
                                    bool* cut);

/// Runs one search. `deadline` may be Clock::time_point::max().
EngineOutput run_engine(const Cluster& cluster, const Model& model, const CostModel& cost,
                        const EngineInput& input, const PlannerOptions& options,
                        Clock::time_point deadline);

}  // namespace whale::plan

// File: cost_model.h
// CostModel: evaluate(plan) -> estimate. libplan declares it; libsim implements it, so the
// planner never depends on the simulator.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/timeline.h"
#include "whale/plan/units.h"

namespace whale::plan {

struct DeviceEstimate {
  int id = 0;
  std::string model;
  Bytes peak_memory_bytes = 0;
  Bytes capacity_bytes = 0;
  Seconds busy_s = 0;              // compute stream busy time in the step
  double achieved_tflops = 0;      // model flops it executed (no recompute) / step time / 1e12
  Bytes tensor_memory_bytes = 0;   // of the peak, the model's tensors; the rest is the
                                   // framework's reserve and allocator slack (the profile's)
};

/// Where the step's time goes, summed over devices and divided by the device count
/// (the average device's step).
struct TimeBreakdown {
  Seconds compute_s = 0;       // forward + backward + optimizer
  Seconds recompute_s = 0;
  Seconds tp_comm_s = 0;       // tensor-parallel all-reduces (exposed or not)
  Seconds pp_comm_s = 0;       // pipeline sends and bridges
  Seconds dp_comm_s = 0;       // data-parallel gradient reduction
  Seconds exposed_comm_s = 0;  // communication the compute stream waited for
  Seconds idle_s = 0;          // compute stream idle (bubbles)
};

struct Estimate {
  Seconds step_time_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;                 // model flops (no recompute) / step time / sum of peaks
  double bubble_fraction = 0;     // idle share of the compute stream, averaged over devices
  bool fits = true;               // every device's peak memory <= capacity
  Flops model_flops_per_step = 0; // 3 * forward flops * global batch
  std::vector<DeviceEstimate> devices;   // one per device in the plan, by ascending id
  TimeBreakdown breakdown;
  std::vector<TimelineEvent> timeline;   // filled only when asked for
};

/// What a cost model can say about a plan without running its step: a lower bound on the step
/// time and the memory verdict.
struct StepBound {
  Seconds step_time_s = 0;        // never above evaluate(plan).step_time_s; 0 when !fits
  bool fits = true;               // evaluate(plan).fits
  std::vector<int> overflowing;   // ids of the devices whose peak memory exceeds capacity, ascending
};

struct EvaluateOptions {
  bool timeline = false;   // record every event (slower)
};

/// What CostModel::bound_and_evaluate found.
struct BoundedEstimate {
  StepBound bound;
  std::optional<Estimate> estimate;   // evaluate(plan), where it was run
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Estimates one training step of a validated plan. Deterministic: the same plan gives the
  /// same estimate. Does not throw for plans that do not fit; it sets fits = false.
  virtual Estimate evaluate(const Plan& plan, const EvaluateOptions& options) const = 0;
  /// A cheap bound of evaluate(plan): the planner skips a plan whose bound is already worse
  /// than the plans it has. Same preconditions; deterministic.
  virtual StepBound bound(const Plan& plan) const = 0;
  /// bound(plan), then evaluate(plan) only when the plan fits and its bound is at most
  /// `evaluate_at_most_s` (an incumbent's step time; infinity evaluates every plan that fits):
  /// the estimate is evaluate's, and `bound` is bound's (fits, overflowing and, when evaluated,
  /// step_time_s). A fitting plan left unevaluated has bound.step_time_s > evaluate_at_most_s, but
  /// possibly below bound(plan)'s: an implementation may stop at a cheaper part of its bound
  /// that already exceeds evaluate_at_most_s. This default makes the two calls; the simulator
  /// shares their work (one schedule program and cost table).
  virtual BoundedEstimate bound_and_evaluate(const Plan& plan, Seconds evaluate_at_most_s,
                                             const EvaluateOptions& options) const {
    BoundedEstimate out{bound(plan), std::nullopt};
    if (out.bound.fits && out.bound.step_time_s <= evaluate_at_most_s) out.estimate = evaluate(plan, options);
    return out;
  }
};

}  // namespace whale::plan

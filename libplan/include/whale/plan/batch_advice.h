// File: batch_advice.h
// Small-batch advice: whether a plan's global batch is too small for its cluster, and the
// smallest global batch at which the planner's best plan reaches a share of the upper bound.
#pragma once

#include <string>

#include "whale/plan/planner.h"

namespace whale::plan {

/// True when the batch leaves the cluster underused: the best plan has too few micro-batches
/// to fill its pipeline (with p groups and m micro-batches, the fill and drain of a 1F1B step,
/// (p - 1) / (m + p - 1) of it, exceed 1 - target), or the batch is smaller than the usable
/// devices (plans with one replica per device would give replicas less than one sample).
bool batch_too_small(const PlanResult& result, int usable_devices, double target);

struct BatchAdvice {
  bool found = false;                  // false: no batch up to the limit reaches the target
  int global_batch = 0;
  double fraction_of_upper_bound = 0;  // of the best plan at that batch
  /// The time limit (PlannerOptions::time_limit_s) ended the advice before it settled: found
  /// is false, and nothing is known about larger batches.
  bool cut = false;
  int step = 0;   // global_batch is the smallest multiple of it that reaches the target
};

/// Without a time limit of the user's, whale-plan gives the advice's re-plans as long as the
/// planning before them took, and at least this many seconds: each re-plan is a search as long
/// as the main one, and on 2,048 devices of four models seven of them took minutes. A small
/// cluster's advice takes well under a second, so the bound only stops the long ones.
constexpr double kAdviceLeastBoundS = 10;

/// Steps of the advice's bisection within the octave where the fraction crosses its target.
constexpr int kAdviceStepsPerOctave = 8;

/// The bisection's step in the octave from `below` (a power-of-two multiple of `from_batch`):
/// below / kAdviceStepsPerOctave rounded down to a multiple of from_batch, at least from_batch.
/// A batch of 6,144 or 6,656 serves a user as well as 6,208, at half the re-plans.
long advice_step(long below, int from_batch);

/// The smallest multiple of a step (up to 64 times the larger of `from_batch` and the usable
/// devices, and kMaxGlobalBatch) whose best plan reaches `target` of the upper bound at that
/// batch, searched with the same planner and options (no baseline, no alternatives):
/// doubling from `from_batch` to the first batch at or above the target, then bisection
/// between it and the batch before (the fraction grows with the batch as bubbles and idle
/// replicas shrink) over the multiples of advice_step: at most three more re-plans. A batch at
/// which the planner finds no plan counts as below the target. With options.time_limit_s, the searches together get that long: each
/// gets what is left of it, and once it is spent (or a search may have been cut by it) the
/// advice stops with `cut` set, since a cut search can misjudge a batch either way.
BatchAdvice advise_global_batch(const Cluster& cluster, const Model& model, const CostModel& cost,
                                const PlannerOptions& options, int from_batch, double target);

/// The one-line warning: "warning: global batch B is too small for this cluster (...): ...".
/// Ends with a newline. `default_bound_s` > 0: the advice ran under whale-plan's own bound of
/// that many seconds (no --time-limit), which a cut advice names.
std::string format_batch_warning(int batch, const PlanResult& result, const BatchAdvice& advice,
                                 double target, double default_bound_s = 0);

}  // namespace whale::plan

// File: simulator.h
// Simulator: libsim's CostModel. Runs a plan's schedule program in a discrete-event engine
// over op, collective and memory models and returns step time, memory and breakdown.
#pragma once

#include <cstdint>

#include "whale/plan/cost_model.h"
#include "whale/plan/units.h"

namespace whale::sim {

struct SimulatorOptions {
  /// Share of each tensor-parallel all-reduce hidden behind compute, in [0, 1]. 0 is Megatron
  /// (all-reduces on the critical path); > 0 models Merak's sub-pipelined TP.
  double tp_overlap = 0.0;
  /// Runs the engine once per class of replica units alike in every cost and transfer
  /// partner, copying the figures to the rest of the class: the same estimate, bit for bit,
  /// in a fraction of the time on wide data-parallel groups. false runs every unit (a check of
  /// the merge; a timeline always runs every unit).
  bool merge_alike_units = true;
};

/// Counters of one evaluation, for benchmarks.
struct SimulationStats {
  std::uint64_t engine_events = 0;  // queue events plus executed instructions of all replica units
  int replica_units = 0;            // (group, replica) units; their tp devices share one
  int simulated_units = 0;          // the units the engine ran: one per class of alike units
};

class Simulator : public plan::CostModel {
 public:
  explicit Simulator(SimulatorOptions options = {});
  /// See CostModel::evaluate. The plan must be valid (plan::validate_plan).
  plan::Estimate evaluate(const plan::Plan& plan,
                          const plan::EvaluateOptions& options) const override;
  /// As evaluate, and fills `stats` when it is not null.
  plan::Estimate evaluate(const plan::Plan& plan, const plan::EvaluateOptions& options,
                          SimulationStats* stats) const;
  /// See CostModel::bound: evaluate's memory verdict, and the makespan of the plan's program
  /// (plan::analyze_schedule) at each stage's fastest replica's compute (kernels, exposed
  /// tensor-parallel all-reduces, optimizer), or the busiest replica's summed compute if that
  /// is longer. Transfers, bridges and gradient reductions only delay the engine further.
  plan::StepBound bound(const plan::Plan& plan) const override;
  /// See CostModel::bound_and_evaluate: one schedule program and cost table for both, and the
  /// busiest replica's summed compute first, so that a plan it already puts above
  /// evaluate_at_most_s is neither analysed (plan::analyze_schedule) nor run.
  plan::BoundedEstimate bound_and_evaluate(const plan::Plan& plan, Seconds evaluate_at_most_s,
                                           const plan::EvaluateOptions& options) const override;

 private:
  SimulatorOptions options_;
};

}  // namespace whale::sim

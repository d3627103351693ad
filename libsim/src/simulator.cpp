// File: simulator.cpp
// Simulator::evaluate: builds the cost table, runs the engine on the plan's schedule program,
// then expands replica units to devices and fills the Estimate.
#include "whale/sim/simulator.h"

#include <algorithm>
#include <map>

#include "cost_table.h"
#include "step_bound.h"
#include "engine.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/calibration.h"
#include "whale/sim/memory_model.h"

namespace whale::sim {
namespace {

/// Adds `count` devices' worth of a unit's times into the breakdown sum.
void accumulate(const UnitStats& u, Seconds step_time_s, int count, plan::TimeBreakdown* sum) {
  const Seconds exposed_s = u.tp_exposed_s + u.pp_exposed_s + u.dp_exposed_s;
  sum->compute_s += count * u.compute_s;
  sum->recompute_s += count * u.recompute_s;
  sum->tp_comm_s += count * u.tp_s;
  sum->pp_comm_s += count * u.pp_s;
  sum->dp_comm_s += count * u.dp_s;
  sum->exposed_comm_s += count * exposed_s;
  sum->idle_s += count * std::max(0.0, step_time_s - u.compute_s - u.recompute_s - exposed_s);
}

std::string event_name(const UnitEvent& e) {
  const std::string where = "s" + std::to_string(e.stage);
  const std::string mb = " mb" + std::to_string(e.micro_batch);
  switch (e.op) {
    case 'F': return "F " + where + mb;
    case 'R': return "R " + where + mb;
    case 'B': return "B " + where + mb;
    case 'W': return "W " + where + mb;
    case 'T': return "tp " + where + mb;
    case 'A': return "send act " + where + mb;
    case 'G': return "send grad " + where + mb;
    case 'D': return "reduce_bucket " + where + " b" + std::to_string(e.bucket);
    case 'O': return "optimizer " + where;
    case 'Z': return "allgather weights " + where;
    case 'E': return "allreduce tied embedding " + where;
  }
  return where;
}

}  // namespace

Simulator::Simulator(SimulatorOptions options) : options_(options) {}

plan::Estimate Simulator::evaluate(const plan::Plan& plan,
                                   const plan::EvaluateOptions& options) const {
  return evaluate(plan, options, nullptr);
}

plan::Estimate Simulator::evaluate(const plan::Plan& plan, const plan::EvaluateOptions& options,
                                   SimulationStats* stats) const {
  const plan::ScheduleProgram program = plan::generate_schedule(plan);
  const ProgramMemories memories = program_memories(plan, group_stages(plan));
  return evaluate_program(plan, program, memories, build_cost_table(plan, memories), options_, options, stats);
}

plan::Estimate evaluate_program(const plan::Plan& plan, const plan::ScheduleProgram& program,
                                const ProgramMemories& memories, const CostTable& table,
                                const SimulatorOptions& simulator, const plan::EvaluateOptions& options,
                                SimulationStats* stats) {
  const EngineResult run =
      run_engine(plan, program, table, simulator.tp_overlap, options.timeline, simulator.merge_alike_units);

  if (stats) {
    stats->engine_events = run.events_processed;
    stats->replica_units = static_cast<int>(run.units.size());
    stats->simulated_units = run.simulated_units;
  }
  plan::Estimate est;
  // The engine's step, plus the fitted fixed per-step overhead (0 without calibration).
  est.step_time_s = run.step_time_s + step_overhead_s(plan);
  est.samples_per_s = plan.global_batch() / est.step_time_s;
  est.tokens_per_s = est.samples_per_s * std::max(1, plan.model.sequence);
  est.model_flops_per_step = 3.0 * plan.model.forward_flops_per_sample() * plan.global_batch();

  // Expand units to devices; the devices of a unit share its stats and memory.
  std::map<int, plan::DeviceEstimate> devices;
  std::vector<std::vector<int>> unit_devices(run.units.size());
  double sum_peak_flops = 0;
  for (std::size_t u = 0; u < run.units.size(); ++u) {
    const UnitStats& stats = run.units[u];
    const plan::GroupProgram& group = program.groups[stats.group];
    const plan::Stage& stage = plan.stages[group.stages.front()];
    const MemoryBreakdown& memory = memories[stats.group][stats.replica];
    unit_devices[u] = stage.replica_devices(stats.replica);
    for (int id : unit_devices[u]) {
      const plan::DeviceProfile& profile = plan.cluster.profile_of(id);
      plan::DeviceEstimate& d = devices[id];
      d.id = id;
      d.model = profile.name;
      d.peak_memory_bytes = memory.total_bytes();
      d.tensor_memory_bytes = memory.tensor_bytes();
      d.capacity_bytes = profile.memory_bytes;
      d.busy_s = stats.compute_s + stats.recompute_s + stats.tp_exposed_s;
      d.achieved_tflops = stats.model_flops / est.step_time_s / 1e12;
      sum_peak_flops += profile.peak(
          plan::effective_gemm_precision(plan.precision, plan.framework_precision, profile));
      est.fits = est.fits && d.peak_memory_bytes <= d.capacity_bytes;
    }
    accumulate(stats, est.step_time_s, static_cast<int>(unit_devices[u].size()), &est.breakdown);
  }
  const double count = static_cast<double>(devices.size());
  for (Seconds* part : {&est.breakdown.compute_s, &est.breakdown.recompute_s,
                        &est.breakdown.tp_comm_s, &est.breakdown.pp_comm_s,
                        &est.breakdown.dp_comm_s, &est.breakdown.exposed_comm_s,
                        &est.breakdown.idle_s}) {
    *part /= count;
  }
  est.bubble_fraction = est.breakdown.idle_s / est.step_time_s;
  est.mfu = est.model_flops_per_step / est.step_time_s / sum_peak_flops;
  for (auto& [id, d] : devices) est.devices.push_back(d);

  if (options.timeline) {
    for (const UnitEvent& e : run.events) {
      for (int id : unit_devices[e.unit]) {
        est.timeline.push_back(plan::TimelineEvent{id, to_string(e.lane), event_name(e), e.stage,
                                                   e.micro_batch, e.start_s, e.duration_s});
      }
    }
    std::stable_sort(est.timeline.begin(), est.timeline.end(),
                     [](const plan::TimelineEvent& a, const plan::TimelineEvent& b) {
                       if (a.device != b.device) return a.device < b.device;
                       return a.start_s < b.start_s;
                     });
  }
  return est;
}

}  // namespace whale::sim

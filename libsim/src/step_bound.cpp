// File: step_bound.cpp
// Simulator::bound: the memory verdict of evaluate and a lower bound on its step time, from the
// cost table and the schedule analysis of the plan's program, without running the engine; and
// Simulator::bound_and_evaluate, which runs it only where that bound is low enough.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "step_bound.h"

#include "cost_table.h"
#include "whale/plan/schedule_analysis.h"
#include "whale/plan/schedule_program.h"
#include "whale/plan/moe_layer.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

namespace whale::sim {
namespace {

// What one replica unit's compute stream runs for a stage, as the engine times it: the
// kernels plus the exposed share of their tensor-parallel all-reduces. A whole backward is
// input_s + weight_s; a split one runs them as its input and weight passes.
struct ReplicaCompute {
  Seconds forward_s = 0;
  Seconds input_s = 0;       // recomputation, the backward but its weight GEMMs, the TP all-reduces
  Seconds weight_s = 0;      // the weight-gradient GEMMs
  Seconds optimizer_s = 0;   // the step and, with sharded gradients, the weight all-gather
};

ReplicaCompute replica_compute(const StageCost& stage, int replica, double exposed) {
  const ReplicaCost& c = stage.replicas[replica];
  return ReplicaCompute{c.forward_s + exposed * c.tp_forward_s,
                        c.recompute_s + exposed * c.tp_recompute_s + c.backward_s - c.backward_weight_s +
                            exposed * c.tp_backward_s,
                        c.backward_weight_s, stage.optimizer_s[replica] + stage.dp_gather_s};
}

// What replica_memory of a group's replica depends on besides the plan and the program: its
// devices' profile, and per stage of the group its share and its piece of the sharded state.
using ReplicaMemoryKey = std::pair<const plan::DeviceProfile*, std::vector<double>>;

ReplicaMemoryKey replica_memory_key(const plan::Plan& plan, const std::vector<int>& stages,
                                    const std::vector<double>& stage_parameters, int replica) {
  ReplicaMemoryKey key{&plan.cluster.profile_of(plan.stages[stages.front()].replica_devices(replica).front()), {}};
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const plan::Stage& stage = plan.stages[stages[i]];
    key.second.push_back(stage.shares.at(replica));
    key.second.push_back(stage.replica_tp(replica));
    key.second.push_back(flat_shard_elements(stage_parameters[i], stage.dp(), replica));
    if (plan.model.moe) {  // the experts its busiest device holds (Stage::expert_counts)
      const int experts = plan.model.moe->experts;
      key.second.push_back(stage.experts_held(plan::busiest_ep_rank(stage, replica, experts), experts));
      key.second.push_back(plan::expert_token_scale(stage, replica));
    }
  }
  return key;
}

// What bound and bound_and_evaluate both start from: evaluate's memory verdict on the plan's
// program (a StepBound with overflowing and fits set, step_time_s 0), from the compute
// instructions alone, and, only when the plan fits, its cost table (the planner raises its
// memory rungs first: a plan that does not fit needs no time). The program itself is generated
// only where a bound needs its makespan.
struct BoundInputs {
  GroupStages groups;
  ProgramMemories memories;
  plan::StepBound memory;
  std::optional<CostTable> table;
};

BoundInputs bound_inputs(const plan::Plan& plan) {
  plan::check_schedule_shape(plan);  // the program's errors first, as when it was generated
  BoundInputs in{group_stages(plan), {}, {}, std::nullopt};
  in.memories = program_memories(plan, in.groups);
  in.memory.overflowing = overflowing_devices(plan, in.groups, in.memories);
  in.memory.fits = in.memory.overflowing.empty();
  if (in.memory.fits) in.table.emplace(build_cost_table(plan, in.memories));
  return in;
}

}  // namespace

// Replicas of one group alike in replica_memory_key (most of a wide data-parallel group) are
// computed once.
GroupStages group_stages(const plan::Plan& plan) {
  GroupStages out(plan.pipeline_groups());
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) out.at(plan.group_of_stage(s)).push_back(s);
  return out;
}

std::vector<MemoryBreakdown> replica_memories(const plan::Plan& plan, const std::vector<int>& stages, int group,
                                              const plan::ComputeSequences& sequences) {
  const plan::Stage& stage = plan.stages[stages.front()];
  const auto instructions = [&](const InstructionVisitor& visit) { sequences.for_each(group, visit); };
  std::map<int, std::vector<double>> parameters_at_tp;  // by replica tp: per stage of the group
  // (replica r's, the first at its tp; replica_memory_key adds each replica's experts)
  std::map<ReplicaMemoryKey, int> first_of;   // the first replica of each key
  std::vector<MemoryBreakdown> out;
  out.reserve(stage.dp());
  for (int r = 0; r < stage.dp(); ++r) {
    std::vector<double>& stage_parameters = parameters_at_tp[stage.replica_tp(r)];
    if (stage_parameters.empty()) {
      for (int s : stages) stage_parameters.push_back(stage_parameters_per_device(plan, s, r));
    }
    const auto [known, added] = first_of.emplace(replica_memory_key(plan, stages, stage_parameters, r), r);
    out.push_back(added ? replica_memory(plan, stages, instructions, r) : out[known->second]);
  }
  return out;
}

ProgramMemories program_memories(const plan::Plan& plan, const GroupStages& groups) {
  const plan::ComputeSequences sequences(plan);
  ProgramMemories out;
  out.reserve(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g)
    out.push_back(replica_memories(plan, groups[g], static_cast<int>(g), sequences));
  return out;
}

std::vector<int> overflowing_devices(const plan::Plan& plan, const GroupStages& groups,
                                     const ProgramMemories& memories) {
  std::vector<int> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const plan::Stage& stage = plan.stages[groups[g].front()];
    for (int r = 0; r < stage.dp(); ++r) {
      const Bytes need = memories[g][r].total_bytes();
      for (int id : stage.replica_devices(r)) {
        if (need > plan.cluster.profile_of(id).memory_bytes) out.push_back(id);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Seconds fastest_makespan_s(const plan::ScheduleProgram& program, const CostTable& table, double exposed) {
  const size_t stages = table.stages.size();
  // Dependencies: every unit of a group waits for the same sends, so the program run at the
  // fastest replica's durations ends no later than any unit of the engine.
  // Each part takes its own fastest replica: a whole backward then costs no more than any
  // replica's (a sum of minima is at most the minimum of the sums).
  plan::StageCosts fastest{std::vector<Seconds>(stages), std::vector<Seconds>(stages),
                           std::vector<Seconds>(stages), std::vector<Seconds>(stages)};
  for (size_t s = 0; s < stages; ++s) {
    const StageCost& stage = table.stages[s];
    Seconds forward_s = std::numeric_limits<Seconds>::infinity();
    Seconds input_s = forward_s, weight_s = forward_s, optimizer_s = forward_s;
    for (size_t r = 0; r < stage.replicas.size(); ++r) {
      const ReplicaCompute c = replica_compute(stage, static_cast<int>(r), exposed);
      forward_s = std::min(forward_s, c.forward_s);
      input_s = std::min(input_s, c.input_s);
      weight_s = std::min(weight_s, c.weight_s);
      optimizer_s = std::min(optimizer_s, c.optimizer_s);
    }
    fastest.forward_s[s] = forward_s;
    fastest.backward_s[s] = input_s;
    fastest.optimizer_s[s] = optimizer_s;
    fastest.weight_s[s] = weight_s;
  }
  return plan::analyze_schedule(program, fastest).makespan_s;
}

Seconds busiest_compute_s(const plan::Plan& plan, const GroupStages& groups, const CostTable& table,
                          double exposed) {
  Seconds out = 0;
  for (const std::vector<int>& stages : groups) {
    const int replicas = static_cast<int>(table.stages[stages.front()].replicas.size());
    for (int r = 0; r < replicas; ++r) {
      Seconds busy_s = 0;
      for (int s : stages) {
        const ReplicaCompute c = replica_compute(table.stages[s], r, exposed);
        busy_s += plan.micro_batches * (c.forward_s + c.input_s + c.weight_s) + c.optimizer_s;
      }
      out = std::max(out, busy_s);
    }
  }
  return out;
}

plan::StepBound Simulator::bound(const plan::Plan& plan) const {
  BoundInputs in = bound_inputs(plan);
  plan::StepBound out = std::move(in.memory);
  if (!out.fits) return out;
  const double exposed = 1.0 - options_.tp_overlap;
  out.step_time_s = std::max(fastest_makespan_s(plan::generate_schedule(plan), *in.table, exposed),
                             busiest_compute_s(plan, in.groups, *in.table, exposed));
  return out;
}

plan::BoundedEstimate Simulator::bound_and_evaluate(const plan::Plan& plan, Seconds evaluate_at_most_s,
                                                    const plan::EvaluateOptions& options) const {
  BoundInputs in = bound_inputs(plan);
  plan::BoundedEstimate out;
  out.bound = std::move(in.memory);
  if (!out.bound.fits) return out;
  const double exposed = 1.0 - options_.tp_overlap;
  // The busiest unit's compute costs O(units); the program's makespan, O(instructions).
  out.bound.step_time_s = busiest_compute_s(plan, in.groups, *in.table, exposed);
  if (out.bound.step_time_s > evaluate_at_most_s) return out;
  const plan::ScheduleProgram program = plan::generate_schedule(plan);
  out.bound.step_time_s = std::max(out.bound.step_time_s, fastest_makespan_s(program, *in.table, exposed));
  if (out.bound.step_time_s > evaluate_at_most_s) return out;
  out.estimate = evaluate_program(plan, program, in.memories, *in.table, options_, options, nullptr);
  return out;
}

}  // namespace whale::sim

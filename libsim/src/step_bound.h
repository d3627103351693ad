// File: step_bound.h
// The parts of Simulator::bound and Simulator::evaluate on a plan's schedule program and cost
// table, so that bound_and_evaluate computes those once for both. Private to libsim.
#pragma once

#include <vector>

#include "cost_table.h"
#include "whale/plan/cost_model.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

namespace whale::sim {

/// The stages each device group of the plan runs (index = group), ascending: the program's
/// GroupProgram::stages, without the program.
using GroupStages = std::vector<std::vector<int>>;
GroupStages group_stages(const plan::Plan& plan);

/// replica_memory of every replica of group `group`, by replica, from its compute instructions
/// (plan::ComputeSequences: the program is not built); replicas alike in what it depends on
/// (their devices' profile, and per stage their share, tp, sharded state and experts) share one
/// computation. Requires plan::check_schedule_shape(plan) to pass.
std::vector<MemoryBreakdown> replica_memories(const plan::Plan& plan, const std::vector<int>& stages, int group,
                                              const plan::ComputeSequences& sequences);

/// replica_memories of every group of the plan: by group, then replica (what the plan's program
/// would give, bit for bit).
using ProgramMemories = std::vector<std::vector<MemoryBreakdown>>;
ProgramMemories program_memories(const plan::Plan& plan, const GroupStages& groups);

/// Ids of the devices whose peak memory (`memories`) exceeds their capacity, ascending.
std::vector<int> overflowing_devices(const plan::Plan& plan, const GroupStages& groups,
                                     const ProgramMemories& memories);

/// The busiest replica unit's compute: each unit's compute stream runs all its stages' work
/// (kernels, `exposed` share of the tp all-reduces, optimizer) one op after another. O(stages x
/// replicas), without the program's instructions.
Seconds busiest_compute_s(const plan::Plan& plan, const GroupStages& groups, const CostTable& table,
                          double exposed);

/// The makespan of the program (plan::analyze_schedule) at each stage's fastest replica's
/// compute: no unit of the engine ends earlier.
Seconds fastest_makespan_s(const plan::ScheduleProgram& program, const CostTable& table, double exposed);

/// Simulator::evaluate on the plan's program, its memories (program_memories) and cost table.
plan::Estimate evaluate_program(const plan::Plan& plan, const plan::ScheduleProgram& program,
                                const ProgramMemories& memories, const CostTable& table,
                                const SimulatorOptions& simulator, const plan::EvaluateOptions& options,
                                SimulationStats* stats);

}  // namespace whale::sim

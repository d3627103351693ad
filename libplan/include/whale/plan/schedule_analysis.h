// File: schedule_analysis.h
// A quick run of a ScheduleProgram with unit costs: the planner's cheap bound and the tests'
// referee. It checks that the program is valid and deadlock-free and measures its bubbles.
#pragma once

#include <vector>

#include "whale/plan/schedule_program.h"
#include "whale/plan/units.h"

namespace whale::plan {

/// The cost of one forward and one backward of any stage. Communication, gradient reduction
/// and the optimizer step cost nothing. A split backward costs backward_s for its
/// backward_input and weight_s for its backward_weight; a whole backward costs both.
struct UnitCosts {
  Seconds forward_s = 1.0;
  Seconds backward_s = 1.0;
  Seconds weight_s = 0.0;
};

/// Costs per stage (index = stage; every vector as long as the program has stages, weight_s
/// may be empty for none): one forward, one backward's input part (recomputation included) and
/// the optimizer step of the stage, and one backward's weight part. A split backward costs
/// backward_s for its backward_input and weight_s for its backward_weight; a whole backward
/// costs both. Communication and gradient reduction cost nothing.
struct StageCosts {
  std::vector<Seconds> forward_s;
  std::vector<Seconds> backward_s;
  std::vector<Seconds> optimizer_s;
  std::vector<Seconds> weight_s;
};

struct ScheduleAnalysis {
  Seconds makespan_s = 0;                  // when the last group finishes its program
  std::vector<Seconds> group_busy_s;       // index = group: its forwards, backwards, optimizer steps
  /// Idle share of all groups over the makespan: 1 - sum(group_busy_s) / (groups * makespan).
  double bubble_fraction = 0;
  /// index = stage: most micro-batches forwarded and not yet backwarded on that stage at once
  /// (a split backward ends with its backward_weight).
  std::vector<int> peak_in_flight_per_stage;
  /// index = group: most (stage, micro-batch) pairs in flight on the group's stages at once.
  std::vector<int> peak_in_flight_per_group;
};

/// Executes `program` as every device would: each group runs its instructions in order; a
/// receive blocks until the matching send has run (sends are buffered and never block); a
/// compute starts when its group is free. With m = 1 + the largest micro-batch index and the
/// stages listed in the groups' `stages`, the program is valid when:
///  - every stage belongs to exactly one group and the stages are 0 .. S-1;
///  - every (stage, micro-batch) has exactly one forward and one backward, on the stage's
///    group, the forward first; the backward is a `backward`, or a backward_input followed by
///    a backward_weight;
///  - a forward has its input: stage 0, or stage-1's forward earlier on the same group, or a
///    receive of stage-1's sent activation earlier; a backward (or backward_input) likewise has
///    stage+1's input gradient;
///  - a send follows the compute whose result it sends; a stage's reduce_bucket instructions
///    follow all its backwards, in bucket order 0, 1, ..; wait_reductions follows them, and
///    optimizer_step follows all the stage's backwards and, when it has buckets, wait_reductions;
///  - no group is left waiting forever (deadlock).
/// Throws whale::Error(file "", yaml_path "schedule", ...) naming the group, the instruction and
/// the broken rule (or every blocked group for a deadlock). Never loops forever.
ScheduleAnalysis analyze_schedule(const ScheduleProgram& program, const UnitCosts& costs = {});

/// As above with the costs of every stage. The makespan is the step of a machine whose groups
/// run their instructions in order, each compute as soon as its group is free and its input
/// has been sent, with these durations and free communication: any run of the same program
/// whose computes take at least these durations and whose transfers take any time >= 0 ends
/// no earlier (the start times are max-plus sums of the durations, so they only grow with
/// them). Throws as above, and when a cost vector is shorter than the program's stages.
ScheduleAnalysis analyze_schedule(const ScheduleProgram& program, const StageCosts& costs);

/// The validity check of analyze_schedule alone; throws the same errors.
void check_schedule(const ScheduleProgram& program);

}  // namespace whale::plan

// File: schedule_program.h
// Schedule programs: for every device group, the ordered instructions of one training step.
// The simulator and the runtime execute the same program.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/plan.h"

namespace whale::plan {

enum class InstructionKind {
  recv_activation,   // receive the input of (stage, micro_batch) from stage-1's group
  forward,           // forward of (stage, micro_batch)
  send_activation,   // send the output of (stage, micro_batch) to stage+1's group
  recv_gradient,     // receive the output gradient of (stage, micro_batch) from stage+1's group
  backward,          // backward of (stage, micro_batch); recomputes first if the stage does
  send_gradient,     // send the input gradient of (stage, micro_batch) to stage-1's group
  reduce_gradients,  // all-reduce stage's gradients across its dp replicas (micro_batch = -1)
  optimizer_step,    // update stage's parameters (micro_batch = -1)
};
const char* to_string(InstructionKind k);

struct Instruction {
  InstructionKind kind = InstructionKind::forward;
  int stage = 0;
  int micro_batch = -1;
  bool operator==(const Instruction& o) const {
    return kind == o.kind && stage == o.stage && micro_batch == o.micro_batch;
  }
};

/// The program of one device group; every device of the group runs it (each on its own
/// share of samples and its own tp shard).
struct GroupProgram {
  int group = 0;
  std::vector<int> stages;                 // stages this group runs, ascending
  std::vector<Instruction> instructions;
};

struct ScheduleProgram {
  std::vector<GroupProgram> groups;        // index = group id
};

/// Pure generator on shapes only: p groups, v chunks (stages = p*v, placed by
/// group_of_stage(kind, p, v, s)), m micro-batches.
/// - gpipe: all forwards, then all backwards in reverse micro-batch order.
/// - 1f1b: warm-up of (p - group - 1) forwards, then one-forward-one-backward, then cool-down.
/// - interleaved-1f1b: Megatron's interleaved 1F1B over v chunks (requires m % p == 0).
/// - wave: Hanayo's wave over v chunks in a V placement.
/// Send/recv instructions are emitted only between stages on different groups. Each group's
/// program ends with, per stage it runs (last stage first), reduce_gradients then
/// optimizer_step. Throws whale::Error(file "", ...) for impossible shapes.
ScheduleProgram generate_schedule(ScheduleKind kind, int groups, int chunks, int micro_batches);
/// The program of a plan.
ScheduleProgram generate_schedule(const Plan& plan);

}  // namespace whale::plan

// File: schedule_program.h
// Schedule programs: for every device group, the ordered instructions of one training step.
// The simulator and the runtime execute the same program.
#pragma once

#include <functional>
#include <memory>
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
  backward_input,    // the input-gradient part of a split backward (zb-h1's B): recomputes
                     // first if the stage does, computes the input gradient and keeps what
                     // backward_weight needs (each linear's input and output gradient)
  backward_weight,   // the weight-gradient part (zb-h1's W) of (stage, micro_batch), after its
                     // backward_input: accumulates the parameter gradients kept for it
  send_gradient,     // send the input gradient of (stage, micro_batch) to stage-1's group
  reduce_bucket,     // all-reduce gradient bucket `bucket` of stage across its dp replicas,
                     // started during the stage's last backward (micro_batch = -1; see below)
  wait_reductions,   // wait until every bucket of stage is reduced (micro_batch = -1)
  optimizer_step,    // update stage's parameters (micro_batch = -1)
};
const char* to_string(InstructionKind k);
/// Whether `k` finishes a micro-batch's parameter gradients of its stage: backward or
/// backward_weight. A backward is either one `backward` or a backward_input followed later by
/// a backward_weight.
bool completes_gradients(InstructionKind k);
/// Whether `k` produces a micro-batch's input gradient (what send_gradient sends): backward or
/// backward_input.
bool produces_input_gradient(InstructionKind k);

struct Instruction {
  InstructionKind kind = InstructionKind::forward;
  int stage = 0;
  int micro_batch = -1;
  int bucket = -1;  // reduce_bucket only: index into gradient_buckets(plan, stage)
  bool operator==(const Instruction& o) const {
    return kind == o.kind && stage == o.stage && micro_batch == o.micro_batch &&
           bucket == o.bucket;
  }
};

/// The data-parallel gradient reduction of a stage s with dp > 1 and n buckets
/// (gradient_buckets(plan, s): bucket 0 holds the stage's last layers):
/// - reduce_bucket(s, 0) .. reduce_bucket(s, n-1) directly follow the LAST backward of s in its
///   group's program (before that backward's send_gradient); under a split backward (zb-h1),
///   the last backward_weight of s, which is what completes the gradients. They are bound to that backward:
///   the backward runs the stage's layers from the last down to the first, and bucket b is
///   READY once it has finished layer buckets[b].first_layer, all earlier micro-batches'
///   backwards having accumulated into the same gradients. Its all-reduce starts when it is
///   ready, on the device's communication stream, although the instruction is listed after
///   the backward: an interpreter starts it from within the backward (or, at the latest, when
///   it reaches the instruction). Buckets start in index order and run one after another on
///   that stream; a bucket's all-reduce sums in place, so nothing may write its gradients
///   until it is waited for.
/// - Concurrency: the rest of that backward and every later instruction (sends, receives,
///   other stages' compute) run on the compute stream while buckets reduce; nothing but
///   wait_reductions waits for them.
/// - wait_reductions(s) blocks the compute stream until every bucket of s has been reduced;
///   it directly precedes optimizer_step(s).
/// Stages with dp = 1 have neither instruction.

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
/// - zb-h1: Qi et al.'s ZB-H1 (Zero Bubble Pipeline Parallelism, ICLR 2024): 1f1b's order of
///   forwards and input-gradient passes (backward_input), with the weight-gradient passes
///   (backward_weight) of group g deferred by g micro-batches, so that they fill the cool-down.
/// Send/recv instructions are emitted only between stages on different groups. Each group's
/// program ends with, per stage it runs (last stage first), optimizer_step. Shapes carry no dp,
/// so this program has no gradient reduction (see add_gradient_reductions).
/// Throws whale::Error(file "", ...) for impossible shapes.
ScheduleProgram generate_schedule(ScheduleKind kind, int groups, int chunks, int micro_batches);
/// Adds the reduction above to a program of generate_schedule: for every stage s with
/// buckets_per_stage[s] = n > 0, reduce_bucket(s, 0 .. n-1) after the last backward of s and
/// wait_reductions(s) before optimizer_step(s). Stages with 0 get nothing.
void add_gradient_reductions(const std::vector<int>& buckets_per_stage, ScheduleProgram* program);
/// The program of a plan: generate_schedule of its shape, with the reduction of every stage
/// with dp > 1 in gradient_buckets(plan, s).
ScheduleProgram generate_schedule(const Plan& plan);
/// Throws what generate_schedule(plan) throws for the plan's shape (chunks, stage count,
/// micro-batches), without generating anything.
void check_schedule_shape(const Plan& plan);
namespace detail {
struct ComputeOp;   // schedule_order.h, private to libplan
}  // namespace detail

/// The compute instructions (forward, backward, backward_input, backward_weight) of each group's
/// program in generate_schedule(plan), in program order, without building the program: O(1)
/// memory, but for wave, whose order is played at construction (or shared with the plans of its
/// shape asked just before: detail::shared_wave_orders). Of a long steady state of
/// 1f1b, interleaved 1f1b and zb-h1 only its first rounds and its last period or more are
/// visited: the rounds left out repeat whole periods, in which every running count of the
/// instructions (micro-batches in flight per stage and in all, bytes kept, stages with
/// gradients) takes again the values it took in the period before (detail::visit_one_f_one_b),
/// so a walk for their extremes, as the memory model's, finds the same extremes.
/// At 2,048 micro-batches a group visits fewer than 4 p v + p rounds instead of 2,048.
class ComputeSequences {
 public:
  /// Requires check_schedule_shape(plan) to pass.
  explicit ComputeSequences(const Plan& plan);
  /// Calls `visit` with each compute instruction of group `group` (0 <= group < the plan's
  /// pipeline_groups()) in order, the repeated rounds of the steady state left out.
  void for_each(int group, const std::function<void(const Instruction&)>& visit) const;

 private:
  ScheduleKind kind_;
  int groups_, chunks_, micro_batches_;
  // wave: each group's compute order (detail::ComputeOrders, shared with the program's generator)
  std::shared_ptr<const std::vector<std::vector<detail::ComputeOp>>> played_;
};

}  // namespace whale::plan

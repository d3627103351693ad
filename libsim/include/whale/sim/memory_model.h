// File: memory_model.h
// Memory per device: weights, gradients, optimizer state (sharded or not), activations kept
// in flight under the schedule program (with recomputation), and what the framework holds
// beyond the tensors (the profile's framework_memory and calibrated reserve).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "whale/plan/gradient_buckets.h"
#include "whale/plan/model_state_bytes.h"
#include "whale/plan/plan.h"
#include "whale/plan/schedule_program.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// Bytes per parameter of model state by precision, optimizer and framework settings:
/// plan::state_bytes_per_param (model_state_bytes.h).
using plan::StateBytesPerParam;
using plan::state_bytes_per_param;

/// Parameters one tp shard holds of `layer`: plan::parameters_per_device (gradient_buckets.h).
using plan::parameters_per_device;

/// What a layer keeps per sample at tp 1 by the framework's choices: its replicated
/// activations (plan::replicated_kept_bytes) and its attention core's bytes
/// (plan::attention_kept_bytes).
struct FrameworkKept {
  Bytes replicated = 0;
  Bytes attention = 0;
};
/// Those of `layer` under `framework` at `precision`.
FrameworkKept framework_kept(const plan::Layer& layer, const plan::FrameworkMemory& framework,
                             plan::Precision precision);

/// Activation bytes one sample of a micro-batch keeps in a layer until its backward
/// (Korthikanti et al. 2022, Table 2; the formulas are in memory_model.cpp), when it keeps
/// `kept` (framework_kept; the overload without takes the layer's activation_bytes_replicated
/// and activation_bytes_attention): none: replicated + (split + attention) / tp; selective:
/// the same without the attention part; full: input_bytes (the checkpoint). Sequence
/// parallelism divides the replicated part (and the checkpoint) by tp too.
Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                            bool sequence_parallel, const FrameworkKept& kept);
Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                            bool sequence_parallel = false);

/// Bytes per sample that recomputing one layer materialises again during its backward:
/// full: what the layer keeps without recomputation; selective: its attention part and the
/// core's output, / tp (plan::selective_rebuilt_bytes); none: 0. `kept` as for
/// kept_activation_bytes.
Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                                bool sequence_parallel, const FrameworkKept& kept);
Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                                bool sequence_parallel = false);

/// Bytes per sample of one layer's backward buffers (Layer::backward_buffer_bytes_*) at tp
/// degree `tp`: the split part / tp, the replicated part / tp under sequence parallelism, and
/// there, whole, the buffers over all rows that whale-run's stage keeps beside them: the tensor
/// region's gathered input and partial output, and the stage border's tensor, each the size of
/// the layer's input (plan::kSequenceParallelWholeBuffers). The memory model adds every
/// stage's largest when the framework caches them per stage (FrameworkMemory::stage_buffer_cache).
Bytes backward_buffer_bytes(const plan::Layer& layer, int tp, bool sequence_parallel);

/// Bytes per sample that a split backward (zb-h1) keeps from its input pass to its weight pass
/// in a layer: plan::weight_pass_bytes (model.h).
using plan::weight_pass_bytes;

/// Elements that member `member` of `members` owns of a flat buffer of `elements` (rounded to
/// a whole count): pieces of ceil(n / members), the last ones shorter or empty. This is how
/// whale-run's sharded optimizer splits its flat parameter buffer.
double flat_shard_elements(double elements, int members, int member);

struct MemoryBreakdown {
  Bytes weights_bytes = 0;
  Bytes gradients_bytes = 0;       // held at the peak (all of them unless the framework frees
                                   // them after each step: framework_memory.h)
  Bytes gradient_bucket_bytes = 0;  // the buckets' own copy of the gradients, when the
                                    // framework keeps one (framework_memory), and a mixed-tp
                                    // stage's fp32 exchange packs when the peak holds them
  Bytes optimizer_bytes = 0;    // states, fp32 master weights and any fp32 gradient copy
  Bytes activations_bytes = 0;  // at the program's peak of in-flight micro-batches, plus the
                                // one-layer transient of recomputation
  Bytes allocator_slack_bytes = 0;    // the tensors times framework_memory's slack fraction
  Bytes framework_reserve_bytes = 0;  // framework_memory's fixed reserve
  Bytes calibrated_reserve_bytes = 0; // the reserve whale-calibrate fitted (calibration block)
  int peak_in_flight = 0;       // micro-batches in flight at that peak (all stages of the group)
  /// What the model's tensors hold at the peak.
  Bytes tensor_bytes() const {
    return weights_bytes + gradients_bytes + gradient_bucket_bytes + optimizer_bytes +
           activations_bytes;
  }
  /// What the device holds at the peak: the tensors, the slack and both reserves.
  Bytes total_bytes() const {
    return tensor_bytes() + allocator_slack_bytes + framework_reserve_bytes +
           calibrated_reserve_bytes;
  }
};

/// Parameters one device of replica `replica` of stage `s` holds: its layers' shards at the
/// replica's tp (the routed experts of its ep rank holding the most, Stage::expert_counts), and
/// on a last stage that holds a copy of a tied token table (Plan::last_stage_holds_table_copy)
/// its shard of that copy.
double stage_parameters_per_device(const plan::Plan& plan, int s, int replica = 0);

/// Memory of one device of replica `replica` of the group that runs `program` (every stage of
/// the program, as a group may run several). The in-flight count is taken from the program:
/// forwards minus backwards so far, per stage, weighted by each stage's kept bytes. A split
/// backward frees the kept bytes at its input pass, and holds weight_pass_bytes from there to
/// its weight pass, where the micro-batch leaves the flight. The framework's figures (attention
/// implementation, slack, reserves, the fp32 gradient copy) and the calibrated activation scale
/// come from the profile of the replica's devices. The activations (kept and transient) are
/// multiplied by calibration.activation_memory_scale. Under framework_memory.fp32_gradient_copy
/// with gradients below 4 bytes, the optimizer bytes count 4 more per parameter it steps (its
/// shard when sharded). A last stage
/// that holds a copy of a tied token table (Plan::last_stage_holds_table_copy) counts it with
/// its gradients and optimizer state. A framework with gradient_bucket_copy holds its unsharded
/// gradients twice on every stage with more than one replica. The transient added to the peak
/// is the most one layer's backward holds beyond what it keeps: its recomputed activations
/// (recompute_transient_bytes) plus, on the head, its loss's buffers or the final norm's output
/// and input gradients (plan::head_backward_transient_bytes, the framework's cross_entropy; the
/// input's left to a stage's cached block buffers where they hold it). Under
/// framework_memory.gradients_freed_after_step a stage's gradients count from its first
/// backward in the program (completes_gradients) on, and the
/// breakdown's gradients_bytes is what is held at the peak (none when the peak comes before
/// any backward).
MemoryBreakdown replica_memory(const plan::Plan& plan, const plan::GroupProgram& program,
                               int replica);

/// A group's instructions in program order, given one by one to a visitor.
using InstructionVisitor = std::function<void(const plan::Instruction&)>;
using InstructionSequence = std::function<void(const InstructionVisitor&)>;

/// replica_memory of the group that runs `group_stages` (ascending) with the instructions of
/// `instructions`: its program's, or only its compute instructions (plan::ComputeSequences,
/// which leaves out the steady state's repeats), which give the same breakdown bit for bit (the
/// other instructions change nothing it walks, nor do the repeats).
MemoryBreakdown replica_memory(const plan::Plan& plan, const std::vector<int>& group_stages,
                               const InstructionSequence& instructions, int replica);

/// The most micro-batches of `stage` in flight at once in `program` (from forward to backward,
/// or to backward_weight).
int peak_in_flight(const plan::GroupProgram& program, int stage);

}  // namespace whale::sim

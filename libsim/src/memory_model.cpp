// File: memory_model.cpp
// Per-device memory: model state by precision and optimizer, activations in flight walked
// from the schedule program, recomputation, the framework's attention implementation and
// copies of the state, its reserve and allocator slack, and the calibrated activation scale.
#include "whale/sim/memory_model.h"

#include <algorithm>
#include <cmath>

#include "whale/plan/attention_memory.h"
#include "whale/plan/error.h"
#include "whale/plan/moe_layer.h"
#include "whale/sim/op_cost.h"

namespace whale::sim {

// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Table 2, activation bytes per transformer layer (s sequence, b micro-batch, h hidden, a
// heads, t tensor-parallel degree; 2-byte elements):
//   no parallelism:                      sbh (34 + 5as/h)
//   tensor parallelism:                  sbh (10 + 24/t + 5as/(ht))
//   tensor + sequence parallelism:       sbh/t (34 + 5as/h)
//   tensor + selective recomputation:    sbh (10 + 24/t)
//   tensor + sequence + selective:       sbh/t 34
//   full recomputation:                  2sbh (the layer input; sharded along the sequence,
//                                        2sbh/t, under sequence parallelism, Section 5)
// A Layer carries the three parts: replicated (10sbh), split (24sbh) and attention (5as^2b);
// the attention part kept is the framework's (attention_memory.h): flash attention keeps no
// s^2 term, and selective recomputation then has nothing of it left to recompute.
Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                            bool sequence_parallel, Bytes attention_bytes) {
  const Bytes replicated = layer.activation_bytes_replicated / (sequence_parallel ? tp : 1);
  switch (recompute) {
    case plan::Recompute::none:
      return replicated + (layer.activation_bytes_split + attention_bytes) / tp;
    case plan::Recompute::selective: return replicated + layer.activation_bytes_split / tp;
    case plan::Recompute::full: return layer.input_bytes / (sequence_parallel ? tp : 1);
  }
  return 0;
}

Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                            bool sequence_parallel) {
  return kept_activation_bytes(layer, tp, recompute, sequence_parallel, layer.activation_bytes_attention);
}

Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                                bool sequence_parallel, Bytes attention_bytes) {
  switch (recompute) {
    case plan::Recompute::none: return 0;
    case plan::Recompute::selective: return attention_bytes / tp;
    case plan::Recompute::full:
      return kept_activation_bytes(layer, tp, plan::Recompute::none, sequence_parallel, attention_bytes);
  }
  return 0;
}

Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                                bool sequence_parallel) {
  return recompute_transient_bytes(layer, tp, recompute, sequence_parallel, layer.activation_bytes_attention);
}

double flat_shard_elements(double elements, int members, int member) {
  const long long total = std::llround(elements);
  if (members <= 1) return static_cast<double>(total);
  const long long size = (total + members - 1) / members;
  const long long begin = std::min(total, size * member);
  return static_cast<double>(std::min(size, total - begin));
}

int peak_in_flight(const plan::GroupProgram& program, int stage) {
  int in_flight = 0, peak = 0;
  for (const plan::Instruction& ins : program.instructions) {
    if (ins.stage != stage) continue;
    if (ins.kind == plan::InstructionKind::forward) peak = std::max(peak, ++in_flight);
    if (plan::completes_gradients(ins.kind)) --in_flight;
  }
  return peak;
}

double stage_parameters_per_device(const plan::Plan& plan, int s, int replica) {
  const plan::Stage& stage = plan.stages.at(s);
  const int ep_rank = plan.model.moe ? plan::busiest_ep_rank(stage, replica, plan.model.moe->experts) : 0;
  double parameters = 0;
  for (int l = stage.first_layer; l < stage.end_layer; ++l)
    parameters += parameters_per_device(plan.model.layers.at(l), stage, ep_rank);
  // The tied LM head's copy of the token table, vocabulary-parallel like the table.
  if (s + 1 == static_cast<int>(plan.stages.size()) && plan.last_stage_holds_table_copy())
    parameters += static_cast<double>(plan.model.vocabulary) * plan.model.hidden / stage.tp;
  return parameters;
}

MemoryBreakdown replica_memory(const plan::Plan& plan, const plan::GroupProgram& program,
                               int replica) {
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer, plan.framework_precision);
  // The devices of a replica are one model; every stage of the group runs on them.
  const plan::DeviceProfile& profile = plan.cluster.profile_of(
      plan.stages.at(program.stages.front()).replica_devices(replica).front());
  const plan::FrameworkMemory& framework = profile.framework_memory;
  // DeepSpeed ZeRO-1/2's fp32 copy of the optimizer's gradients, when they are not fp32 already.
  const double optimizer_bytes = plan::held_optimizer_bytes_per_param(state, framework);
  MemoryBreakdown out;
  std::vector<Bytes> kept_per_micro_batch(plan.stages.size(), 0);  // by stage: bytes one micro-batch keeps
  std::vector<Bytes> weight_pass_per_micro_batch(plan.stages.size(), 0);  // by stage: kept for a weight pass
  Bytes transient_bytes = 0;                  // one layer's full activations, recomputing
  for (int s : program.stages) {
    const plan::Stage& stage = plan.stages.at(s);
    const double samples = stage.shares.at(replica);
    const double parameters = stage_parameters_per_device(plan, s, replica);
    const int ep_rank = plan.model.moe ? plan::busiest_ep_rank(stage, replica, plan.model.moe->experts) : 0;
    double expert_parameters = 0;  // the routed experts' part, sharded over expert dp
    Bytes kept = 0, weight_pass = 0;
    for (int l = stage.first_layer; l < stage.end_layer; ++l) {
      const plan::Layer& model_layer = plan.model.layers.at(l);
      const bool moe = model_layer.experts > 0;
      // An MoE layer as the replica's device holding the most experts holds it, at the busiest load.
      const plan::Layer busiest =
          moe ? plan::layer_at_expert_layout(model_layer, stage, true, ep_rank, plan::expert_token_scale(stage, replica))
              : plan::Layer{};
      const plan::Layer& layer = moe ? busiest : model_layer;
      expert_parameters += plan::expert_parameters_per_device(model_layer, stage, ep_rank);
      const Bytes attention = plan::attention_kept_bytes(layer, framework.attention, plan.precision);
      weight_pass += weight_pass_bytes(layer, stage.tp, plan.precision) * samples;
      kept += kept_activation_bytes(layer, stage.tp, stage.recompute, stage.sequence_parallel,
                                    attention) *
              samples;
      transient_bytes = std::max(
          transient_bytes, recompute_transient_bytes(layer, stage.tp, stage.recompute,
                                                     stage.sequence_parallel, attention) *
                               samples);
    }
    kept_per_micro_batch[s] = kept;
    weight_pass_per_micro_batch[s] = weight_pass;
    // Sharded state: this replica's piece of the flat buffer (ceil(n/dp) elements, the last
    // piece shorter), as whale-run's sharded optimizer splits it.
    // Routed experts are sharded over their own replicas, expert dp (Megatron-LM's distributed
    // optimizer: the expert-data-parallel group), the rest over dp.
    const double own = flat_shard_elements(parameters - expert_parameters, stage.dp(), replica) +
                       expert_parameters / stage.expert_dp();
    out.weights_bytes += parameters * state.weights;
    out.gradients_bytes += (stage.shard_gradients ? own : parameters) * state.gradients;
    if (framework.gradient_bucket_copy && stage.dp() > 1 && !stage.shard_gradients)
      out.gradient_bucket_bytes += parameters * state.gradients;
    out.optimizer_bytes += (stage.shard_optimizer ? own : parameters) * optimizer_bytes;
  }
  Bytes live = 0, peak = 0;
  int in_flight = 0;
  using K = plan::InstructionKind;
  for (const plan::Instruction& ins : program.instructions) {
    switch (ins.kind) {
      case K::forward:
        live += kept_per_micro_batch[ins.stage];
        ++in_flight;
        break;
      case K::backward_input:
        live += weight_pass_per_micro_batch[ins.stage] - kept_per_micro_batch[ins.stage];
        break;
      case K::backward:
        live -= kept_per_micro_batch[ins.stage];
        --in_flight;
        break;
      case K::backward_weight:
        live -= weight_pass_per_micro_batch[ins.stage];
        --in_flight;
        break;
      default: break;
    }
    if (live > peak) {
      peak = live;
      out.peak_in_flight = in_flight;
    }
  }
  // The activation scale that whale-calibrate fits from measured peaks (1 uncalibrated).
  out.activations_bytes = (peak + transient_bytes) * profile.calibration.activation_memory_scale;
  const Bytes tensors = out.tensor_bytes();
  out.allocator_slack_bytes = plan::allocator_slack_bytes(framework, tensors);
  out.framework_reserve_bytes = framework.reserve_bytes;
  out.calibrated_reserve_bytes = profile.calibration.memory_reserve_bytes;
  return out;
}

}  // namespace whale::sim

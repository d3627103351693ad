// File: memory_model.cpp
// Per-device memory: model state by precision and optimizer, activations in flight walked
// from the schedule program, recomputation, the framework's attention implementation and
// copies of the state, its reserve and allocator slack, and the calibrated activation scale.
#include "whale/sim/memory_model.h"

#include <algorithm>
#include <cmath>

#include "whale/plan/attention_memory.h"
#include "whale/plan/error.h"
#include "whale/plan/loss_memory.h"
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
FrameworkKept framework_kept(const plan::Layer& layer, const plan::FrameworkMemory& framework,
                             plan::Precision precision) {
  return {plan::replicated_kept_bytes(layer, framework), plan::attention_kept_bytes(layer, framework, precision)};
}

Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                            bool sequence_parallel, const FrameworkKept& kept) {
  const Bytes replicated = kept.replicated / (sequence_parallel ? tp : 1);
  switch (recompute) {
    case plan::Recompute::none:
      return replicated + (layer.activation_bytes_split + kept.attention) / tp;
    case plan::Recompute::selective: return replicated + layer.activation_bytes_split / tp;
    case plan::Recompute::full: return layer.input_bytes / (sequence_parallel ? tp : 1);
  }
  return 0;
}

// The layer's own figures, as a listed layer or Megatron-LM's fused softmax gives them.
static FrameworkKept listed_kept(const plan::Layer& layer) {
  return {layer.activation_bytes_replicated, layer.activation_bytes_attention};
}

Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                            bool sequence_parallel) {
  return kept_activation_bytes(layer, tp, recompute, sequence_parallel, listed_kept(layer));
}

Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                                bool sequence_parallel, const FrameworkKept& kept) {
  switch (recompute) {
    case plan::Recompute::none: return 0;
    case plan::Recompute::selective: return plan::selective_rebuilt_bytes(layer, kept.attention) / tp;
    case plan::Recompute::full:
      return kept_activation_bytes(layer, tp, plan::Recompute::none, sequence_parallel, kept);
  }
  return 0;
}

Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute,
                                bool sequence_parallel) {
  return recompute_transient_bytes(layer, tp, recompute, sequence_parallel, listed_kept(layer));
}

Bytes backward_buffer_bytes(const plan::Layer& layer, int tp, bool sequence_parallel) {
  if (!sequence_parallel)
    return layer.backward_buffer_bytes_split / tp + layer.backward_buffer_bytes_replicated;
  return layer.backward_buffer_bytes_split / tp + layer.backward_buffer_bytes_replicated / tp +
         plan::kSequenceParallelWholeBuffers * layer.input_bytes;
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
  const plan::Stage stage = plan.stages.at(s).as_replica(replica);
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
  const auto instructions = [&](const InstructionVisitor& visit) {
    for (const plan::Instruction& ins : program.instructions) visit(ins);
  };
  return replica_memory(plan, program.stages, instructions, replica);
}

MemoryBreakdown replica_memory(const plan::Plan& plan, const std::vector<int>& group_stages,
                               const InstructionSequence& instructions, int replica) {
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer, plan.framework_precision);
  // The devices of a replica are one model; every stage of the group runs on them.
  const plan::DeviceProfile& profile = plan.cluster.profile_of(
      plan.stages.at(group_stages.front()).replica_devices(replica).front());
  const plan::FrameworkMemory& framework = profile.framework_memory;
  // DeepSpeed ZeRO-1/2's fp32 copy of the optimizer's gradients, when they are not fp32 already.
  const double optimizer_bytes = plan::held_optimizer_bytes_per_param(state, framework);
  const double unsharded_optimizer_bytes = plan::unsharded_optimizer_bytes_per_param(state, framework);
  MemoryBreakdown out;
  std::vector<Bytes> kept_per_micro_batch(plan.stages.size(), 0);  // by stage: bytes one micro-batch keeps
  std::vector<Bytes> weight_pass_per_micro_batch(plan.stages.size(), 0);  // by stage: kept for a weight pass
  std::vector<Bytes> gradients_of_stage(plan.stages.size(), 0);        // by stage: its gradients
  // By stage: the fp32 pack buffers of a mixed-tp stage's gradient exchange (every gradient the
  // device holds, once more: whale-run's GradientReducer packs each bucket from its start to
  // its completion), held from the stage's last backward to the step's end.
  std::vector<Bytes> exchange_packs_of_stage(plan.stages.size(), 0);
  Bytes transient_bytes = 0;  // the most one layer's backward holds beyond what it keeps: its
                              // recomputed activations and, on the head, its backward's buffers
  Bytes cached_buffers = 0;   // under stage_buffer_cache: every stage's backward buffers and
                              // recomputation's scratch
  Bytes uncached_transient = 0;  // under stage_buffer_cache: transient_bytes less that scratch
  for (int s : group_stages) {
    const plan::Stage stage = plan.stages.at(s).as_replica(replica);  // at the replica's tp
    const double samples = stage.shares.at(replica);
    const double parameters = stage_parameters_per_device(plan, s, replica);
    const int ep_rank = plan.model.moe ? plan::busiest_ep_rank(stage, replica, plan.model.moe->experts) : 0;
    double expert_parameters = 0;  // the routed experts' part, sharded over expert dp
    Bytes kept = 0, weight_pass = 0, stage_buffers = 0, stage_scratch = 0;
    // Under stage_buffer_cache a stage's block buffers hold the gradient the head's backward
    // hands on (a block's output gradient); a stage without them holds it beside the head's.
    const auto stage_layers = plan.model.layers.begin();
    const bool input_gradient_cached =
        framework.stage_buffer_cache &&
        std::any_of(stage_layers + stage.first_layer, stage_layers + stage.end_layer,
                    [](const plan::Layer& l) { return backward_buffer_bytes(l, 1, false) > 0; });
    for (int l = stage.first_layer; l < stage.end_layer; ++l) {
      const plan::Layer& model_layer = plan.model.layers.at(l);
      const bool moe = model_layer.experts > 0;
      // An MoE layer as the replica's device holding the most experts holds it, at the busiest load.
      const plan::Layer busiest =
          moe ? plan::layer_at_expert_layout(model_layer, stage, true, ep_rank, plan::expert_token_scale(stage, replica))
              : plan::Layer{};
      const plan::Layer& layer = moe ? busiest : model_layer;
      expert_parameters += plan::expert_parameters_per_device(model_layer, stage, ep_rank);
      const FrameworkKept layer_kept = framework_kept(layer, framework, plan.precision);
      weight_pass += weight_pass_bytes(layer, stage.tp, plan.precision) * samples;
      kept += kept_activation_bytes(layer, stage.tp, stage.recompute, stage.sequence_parallel,
                                    layer_kept) *
              samples;
      const Bytes loss = plan::head_backward_transient_bytes(layer, framework.cross_entropy, stage.tp,
                                                             stage.sequence_parallel, input_gradient_cached) *
                         samples;
      const Bytes recomputed =
          recompute_transient_bytes(layer, stage.tp, stage.recompute, stage.sequence_parallel, layer_kept) * samples;
      transient_bytes = std::max(transient_bytes, recomputed + loss);
      // A framework that caches its buffers (whale-run) rebuilds a block under recomputation
      // (the whole block under full, its attention core's probabilities and output under
      // selective) into one block's worth of scratch that its stage keeps for the run.
      const bool scratch = framework.stage_buffer_cache && stage.recompute != plan::Recompute::none &&
                           layer.kind == plan::LayerKind::transformer;
      if (scratch) stage_scratch = std::max(stage_scratch, recomputed);
      uncached_transient = std::max(uncached_transient, (scratch ? 0.0 : recomputed) + loss);
      stage_buffers = std::max(stage_buffers, backward_buffer_bytes(layer, stage.tp, stage.sequence_parallel) * samples);
    }
    if (framework.stage_buffer_cache) cached_buffers += stage_buffers + stage_scratch;
    kept_per_micro_batch[s] = kept;
    weight_pass_per_micro_batch[s] = weight_pass;
    // Sharded state: this replica's piece of the flat buffer (ceil(n/dp) elements, the last
    // piece shorter), as whale-run's sharded optimizer splits it.
    // Routed experts are sharded over their own replicas, expert dp (Megatron-LM's distributed
    // optimizer: the expert-data-parallel group), the rest over dp.
    const double own = flat_shard_elements(parameters - expert_parameters, stage.dp(), replica) +
                       expert_parameters / stage.expert_dp();
    out.weights_bytes += parameters * state.weights;
    // ZeRO-2's gradients: the replica's piece, or the whole buffer where the framework keeps it.
    const bool pieces_only = stage.shard_gradients && !framework.sharded_gradients_held_whole;
    gradients_of_stage[s] = (pieces_only ? own : parameters) * state.gradients;
    out.gradients_bytes += gradients_of_stage[s];
    if (framework.gradient_bucket_copy && stage.dp() > 1 && !stage.shard_gradients)
      out.gradient_bucket_bytes += parameters * state.gradients;
    if (plan.stages.at(s).mixed_tp() && stage.dp() > 1) exchange_packs_of_stage[s] = parameters * 4.0;
    // A sharded optimizer holds its piece of the states and, where the framework keeps them
    // whole (master_weights_held_whole), every parameter's master weights.
    out.optimizer_bytes += stage.shard_optimizer ? own * (optimizer_bytes - unsharded_optimizer_bytes) +
                                                       parameters * unsharded_optimizer_bytes
                                                 : parameters * optimizer_bytes;
  }
  // Walk the program: activations kept in flight, and, when the framework frees its gradients
  // after each step, the gradients of every stage that has run a backward. The peak is the
  // instruction where both (with the activations' transient and scale) sum highest; persistent
  // gradients are the same at every instruction, and then the activations alone decide.
  // The activation scale that whale-calibrate fits from measured peaks (1 uncalibrated).
  const double scale = profile.calibration.activation_memory_scale;
  const bool freed = framework.gradients_freed_after_step;
  std::vector<bool> has_gradients(plan.stages.size(), !freed);
  Bytes live = 0, held_gradients = freed ? 0 : out.gradients_bytes;
  // The transient comes with a backward, while its micro-batch is in flight; with freed
  // gradients a moment with nothing in flight (the optimizer step) holds none. Persistent
  // gradients keep the conservative sum: the transient on top of the activations' peak.
  const auto transient_at = [&](int in_flight_now) { return freed && in_flight_now == 0 ? 0.0 : transient_bytes; };
  // Before the first instruction: nothing in flight.
  Bytes peak_live = 0, peak_gradients = held_gradients, peak_transient = transient_at(0);
  Bytes peak_total = peak_transient * scale + held_gradients;
  int in_flight = 0;
  // Mixed-tp exchange packs held now; the exchanges' buffers at the peak (those packs or the
  // tied table's buffer, below); backwards (gradient passes) so far by stage.
  Bytes exchange = 0, peak_exchange = 0;
  std::vector<int> gradient_passes(plan.stages.size(), 0);
  // A moment holding these; the peak when its total is the highest so far.
  const auto consider = [&](Bytes live_now, Bytes transient_now, Bytes gradients_now,
                            Bytes exchange_now, int in_flight_now) {
    const Bytes total = (live_now + transient_now) * scale + gradients_now + exchange_now;
    if (total <= peak_total) return;
    peak_total = total;
    peak_live = live_now;
    peak_transient = transient_now;
    peak_gradients = gradients_now;
    peak_exchange = exchange_now;
    out.peak_in_flight = in_flight_now;
  };
  // The split backward's (zb-h1) weight-pass tensors held now and at most, for stage_buffer_cache.
  Bytes pending_weight_pass = 0, most_pending_weight_pass = 0;
  // By stage, for stage_buffer_cache: micro-batches whose buffers the stage holds now and at
  // most, from the forward to the pass that makes the input gradient (whale-run's stage module
  // takes a micro-batch's buffers back after it; a split backward's weight pass keeps copies).
  std::vector<int> stage_in_flight(plan.stages.size(), 0), stage_most(plan.stages.size(), 0);
  using K = plan::InstructionKind;
  instructions([&](const plan::Instruction& ins) {
    if (ins.kind == K::forward)
      stage_most[ins.stage] = std::max(stage_most[ins.stage], ++stage_in_flight[ins.stage]);
    if (plan::produces_input_gradient(ins.kind)) --stage_in_flight[ins.stage];
    switch (ins.kind) {
      case K::forward:
        live += kept_per_micro_batch[ins.stage];
        ++in_flight;
        break;
      case K::backward_input:
        live += weight_pass_per_micro_batch[ins.stage] - kept_per_micro_batch[ins.stage];
        pending_weight_pass += weight_pass_per_micro_batch[ins.stage];
        most_pending_weight_pass = std::max(most_pending_weight_pass, pending_weight_pass);
        break;
      case K::backward:
        live -= kept_per_micro_batch[ins.stage];
        --in_flight;
        break;
      case K::backward_weight:
        live -= weight_pass_per_micro_batch[ins.stage];
        pending_weight_pass -= weight_pass_per_micro_batch[ins.stage];
        --in_flight;
        break;
      default: break;
    }
    if (plan::completes_gradients(ins.kind) && !has_gradients[ins.stage]) {
      has_gradients[ins.stage] = true;
      held_gradients += gradients_of_stage[ins.stage];
    }
    if (plan::completes_gradients(ins.kind) && ++gradient_passes[ins.stage] == plan.micro_batches)
      exchange += exchange_packs_of_stage[ins.stage];
    consider(live, transient_at(in_flight), held_gradients, exchange, in_flight);
  });
  // The step's end, after the exchanges: the copies of a tied token table split unlike
  // (Plan::tied_table_copies_split_alike) are summed through an fp32 buffer of the whole table
  // on the devices of one of the two stages.
  const bool table_stage = std::count(group_stages.begin(), group_stages.end(), 0) > 0;
  const bool head_stage =
      std::count(group_stages.begin(), group_stages.end(), static_cast<int>(plan.stages.size()) - 1) > 0;
  const Bytes tied_buffer = plan.last_stage_holds_table_copy() && !plan.tied_table_copies_split_alike() &&
                                    table_stage != head_stage
                                ? static_cast<double>(plan.model.vocabulary) * plan.model.hidden * 4.0
                                : 0.0;
  if (tied_buffer > 0) consider(live, transient_at(in_flight), held_gradients, tied_buffer, in_flight);
  // A framework that caches every stage's buffers (whale-run) holds, once each stage has reached
  // its most micro-batches in flight, all those activations at once, every stage's backward
  // buffers and recomputation's scratch with the rest of the transient, and beside them
  // the weight-pass tensors of a split backward (copies its queue holds until the weight pass,
  // the walk's most at once), and at the step's end the exchange packs or, after them, the tied
  // table's buffer: never less than the walk's peak.
  if (framework.stage_buffer_cache) {
    Bytes cached_live = 0;
    int cached_in_flight = 0;
    for (int s : group_stages) {
      cached_live += stage_most[s] * kept_per_micro_batch[s];
      cached_in_flight += stage_most[s];
    }
    cached_live += most_pending_weight_pass;
    consider(cached_live, uncached_transient + cached_buffers, out.gradients_bytes,
             std::max(exchange, tied_buffer), cached_in_flight);
  }
  out.gradients_bytes = peak_gradients;
  out.gradient_bucket_bytes += peak_exchange;
  out.activations_bytes = (peak_live + peak_transient) * scale;
  const Bytes tensors = out.tensor_bytes();
  out.allocator_slack_bytes = plan::allocator_slack_bytes(framework, tensors);
  out.framework_reserve_bytes = framework.reserve_bytes;
  out.calibrated_reserve_bytes = profile.calibration.memory_reserve_bytes;
  return out;
}

}  // namespace whale::sim

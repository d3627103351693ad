// File: memory_model.cpp
// Per-device memory: model state by precision and optimizer, activations in flight walked
// from the schedule program, recomputation and workspace.
#include "whale/sim/memory_model.h"

#include <algorithm>
#include <map>

#include "whale/plan/error.h"

namespace whale::sim {

StateBytesPerParam state_bytes_per_param(plan::Precision precision, const std::string& optimizer) {
  int states = 0;
  if (optimizer == "adam" || optimizer == "adamw") {
    states = 2;  // m and v
  } else if (optimizer == "sgd") {
    states = 1;  // momentum
  } else {
    throw Error("", "training.optimizer", "a known optimizer, got '" + optimizer + "'",
                "use adam, adamw or sgd");
  }
  const bool mixed = precision == plan::Precision::fp16 || precision == plan::Precision::bf16;
  StateBytesPerParam out;
  out.weights = plan::bytes_per_element(precision);
  out.gradients = plan::bytes_per_element(precision);
  // fp32 optimizer states, plus fp32 master weights under mixed precision.
  out.optimizer = 4.0 * states + (mixed ? 4.0 : 0.0);
  return out;
}

Bytes kept_activation_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute) {
  switch (recompute) {
    case plan::Recompute::none: return layer.activation_bytes(tp);
    case plan::Recompute::selective:
      return layer.activation_bytes(tp) - layer.activation_bytes_attention / tp;
    case plan::Recompute::full: return layer.input_bytes;
  }
  return layer.activation_bytes(tp);
}

Bytes recompute_transient_bytes(const plan::Layer& layer, int tp, plan::Recompute recompute) {
  switch (recompute) {
    case plan::Recompute::none: return 0;
    case plan::Recompute::selective: return layer.activation_bytes_attention / tp;
    case plan::Recompute::full: return layer.activation_bytes(tp);
  }
  return 0;
}

int peak_in_flight(const plan::GroupProgram& program, int stage) {
  int in_flight = 0, peak = 0;
  for (const plan::Instruction& ins : program.instructions) {
    if (ins.stage != stage) continue;
    if (ins.kind == plan::InstructionKind::forward) peak = std::max(peak, ++in_flight);
    if (ins.kind == plan::InstructionKind::backward) --in_flight;
  }
  return peak;
}

MemoryBreakdown replica_memory(const plan::Plan& plan, const plan::GroupProgram& program,
                               int replica, Bytes workspace_bytes) {
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer);
  MemoryBreakdown out;
  out.workspace_bytes = workspace_bytes;
  std::map<int, Bytes> kept_per_micro_batch;  // stage -> bytes one micro-batch keeps
  Bytes transient_bytes = 0;                  // one layer's full activations, recomputing
  for (int s : program.stages) {
    const plan::Stage& stage = plan.stages.at(s);
    const double samples = stage.shares.at(replica);
    double parameters = 0;
    Bytes kept = 0;
    for (int l = stage.first_layer; l < stage.end_layer; ++l) {
      const plan::Layer& layer = plan.model.layers.at(l);
      parameters += parameters_per_device(layer, stage.tp);
      kept += kept_activation_bytes(layer, stage.tp, stage.recompute) * samples;
      transient_bytes = std::max(transient_bytes, recompute_transient_bytes(layer, stage.tp,
                                                                            stage.recompute) *
                                                      samples);
    }
    kept_per_micro_batch[s] = kept;
    out.weights_bytes += parameters * state.weights;
    out.gradients_bytes += parameters * state.gradients;
    out.optimizer_bytes += parameters * state.optimizer / (stage.shard_optimizer ? stage.dp() : 1);
  }
  Bytes live = 0, peak = 0;
  int in_flight = 0;
  for (const plan::Instruction& ins : program.instructions) {
    if (ins.kind == plan::InstructionKind::forward) {
      live += kept_per_micro_batch[ins.stage];
      ++in_flight;
      if (live > peak) {
        peak = live;
        out.peak_in_flight = in_flight;
      }
    } else if (ins.kind == plan::InstructionKind::backward) {
      live -= kept_per_micro_batch[ins.stage];
      --in_flight;
    }
  }
  out.activations_bytes = peak + transient_bytes;
  return out;
}

}  // namespace whale::sim

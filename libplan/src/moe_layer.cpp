// File: moe_layer.cpp
// A mixture-of-experts layer at a stage's expert layout (moe_layer.h).
#include "whale/plan/moe_layer.h"

namespace whale::plan {

Layer layer_at_expert_layout(const Layer& layer, const Stage& stage, bool busiest) {
  if (layer.experts <= 0) return layer;
  const double tp = stage.tp, ep = stage.ep, etp = stage.expert_tp_degree();
  const double imbalance = busiest ? layer.expert_load_imbalance : 1.0;
  Layer out = layer;
  for (GemmOp& gemm : out.gemms) {
    if (!gemm.expert) continue;
    gemm.m *= ep * etp / tp * imbalance;
    gemm.n /= etp;
    gemm.count /= ep;
    gemm.tp_split = false;
  }
  for (MemoryOp& op : out.memory_ops) {
    if (op.expert) op.bytes *= imbalance;
  }
  const double experts_at_tp = layer.expert_parameters * tp / (ep * etp);
  out.parameters += experts_at_tp - layer.expert_parameters;
  out.expert_parameters = experts_at_tp;
  // The experts keep their input rows (all_to_all_bytes per sample: s k h elements), whole on
  // each of the expert_tp shards, and their hidden activations, split; a device holds 1/tp of
  // the token copies.
  const Bytes input = layer.all_to_all_bytes;
  out.activation_bytes_split += (input * etp + (layer.activation_bytes_expert - input)) * imbalance;
  out.activation_bytes_expert = 0;
  return out;
}

double expert_parameters_per_device(const Layer& layer, const Stage& stage) {
  return layer.expert_parameters / (stage.ep * stage.expert_tp_degree());
}

Bytes all_to_all_bytes_per_device(const Layer& layer, const Stage& stage, double samples, bool busiest) {
  return layer.all_to_all_bytes * samples / stage.tp * (busiest ? layer.expert_load_imbalance : 1.0);
}

}  // namespace whale::plan

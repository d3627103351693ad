// File: moe_layer.cpp
// A mixture-of-experts layer at a stage's expert layout (moe_layer.h).
#include "whale/plan/moe_layer.h"

#include <algorithm>
#include <vector>

namespace whale::plan {

double expert_load_share(const Stage& stage, int ep_rank, int experts) {
  return static_cast<double>(stage.experts_held(ep_rank, experts)) * stage.ep / experts;
}

int busiest_ep_rank(const Stage& stage, int replica, int experts) {
  int best = stage.ep_rank_of(replica * stage.tp);
  for (int index = replica * stage.tp; index < (replica + 1) * stage.tp; ++index) {
    const int rank = stage.ep_rank_of(index);
    if (stage.experts_held(rank, experts) > stage.experts_held(best, experts)) best = rank;
  }
  return best;
}

int most_experts_rank(const Stage& stage, int experts) {
  int best = 0;
  for (int rank = 1; rank < stage.ep; ++rank)
    if (stage.experts_held(rank, experts) > stage.experts_held(best, experts)) best = rank;
  return best;
}

std::vector<int> expert_group_shares(const Stage& stage, int replica) {
  const int etp = stage.expert_tp_degree();
  const int index = replica * stage.tp;  // the replica's first device, in the stage's order
  const int expert_replica = index / (stage.ep * etp), expert_tp_rank = index % etp;
  std::vector<int> shares;
  for (int e = 0; e < stage.ep; ++e)
    shares.push_back(stage.shares.at(((expert_replica * stage.ep + e) * etp + expert_tp_rank) / stage.tp));
  return shares;
}

double expert_token_scale(const Stage& stage, int replica) {
  double group_samples = 0;
  for (int share : expert_group_shares(stage, replica)) group_samples += share;
  return group_samples / stage.ep / stage.shares.at(replica);
}

Layer layer_at_expert_layout(const Layer& layer, const Stage& stage, bool busiest, int ep_rank,
                             double token_scale) {
  if (layer.experts <= 0) return layer;
  const int experts = static_cast<int>(layer.experts);
  const double tp = stage.tp, etp = stage.expert_tp_degree();
  const double held = stage.experts_held(ep_rank, experts);
  const double share = expert_load_share(stage, ep_rank, experts);
  const double load = (busiest ? layer.expert_load_imbalance : 1.0) * token_scale;
  Layer out = layer;
  for (GemmOp& gemm : out.gemms) {
    if (!gemm.expert) continue;
    gemm.m *= stage.ep * etp / tp * load;
    gemm.n /= etp;
    gemm.count *= held / layer.experts;
    gemm.tp_split = false;
  }
  for (MemoryOp& op : out.memory_ops) {
    if (op.expert) op.bytes *= load * share;
  }
  const double experts_at_tp = layer.expert_parameters * tp * held / (layer.experts * etp);
  out.parameters += experts_at_tp - layer.expert_parameters;
  out.expert_parameters = experts_at_tp;
  // The experts keep their input rows (all_to_all_bytes per sample: s k h elements), whole on
  // each of the expert_tp shards, and their hidden activations, split; a device holds 1/tp of
  // the token copies, times its share of the experts.
  const Bytes input = layer.all_to_all_bytes;
  out.activation_bytes_split += (input * etp + (layer.activation_bytes_expert - input)) * load * share;
  out.activation_bytes_expert = 0;
  return out;
}

double expert_parameters_per_device(const Layer& layer, const Stage& stage, int ep_rank) {
  if (layer.experts <= 0) return 0;
  return layer.expert_parameters * stage.experts_held(ep_rank, static_cast<int>(layer.experts)) /
         (static_cast<double>(layer.experts) * stage.expert_tp_degree());
}

Bytes all_to_all_bytes_per_device(const Layer& layer, const Stage& stage, double samples, bool busiest) {
  const Bytes mean = layer.all_to_all_bytes * samples / stage.tp;
  if (!busiest) return mean;
  const int experts = static_cast<int>(layer.experts);
  if (experts <= 0) return mean * layer.expert_load_imbalance;
  const double share = expert_load_share(stage, most_experts_rank(stage, experts), experts);
  return mean * layer.expert_load_imbalance * std::max(1.0, share);
}

}  // namespace whale::plan

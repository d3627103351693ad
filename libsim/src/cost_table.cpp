// File: cost_table.cpp
// Fills the CostTable from the op, collective and memory models.
#include "cost_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "whale/plan/bridge.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/op_cost.h"

namespace whale::sim {
namespace {

/// What a replica's costs depend on: its share, its device model and, per tp device, its node
/// relative to the first device's and that node's links (all that allreduce_s reads).
struct ReplicaKey {
  int share = 0;
  std::string model;
  std::vector<double> layout;
  bool operator<(const ReplicaKey& o) const {
    return std::tie(share, model, layout) < std::tie(o.share, o.model, o.layout);
  }
};

ReplicaKey replica_key(const plan::Plan& plan, const plan::Stage& stage, int replica) {
  ReplicaKey key;
  key.share = stage.shares.at(replica);
  const std::vector<int> devices = stage.replica_devices(replica);
  key.model = plan.cluster.devices.at(devices.front()).model;
  const int first_node = plan.cluster.devices.at(devices.front()).node;
  for (int d : devices) {
    const int node = plan.cluster.devices.at(d).node;
    const plan::Link& intra = plan.cluster.nodes.at(node).intra_link;
    const plan::Link share = device_network_share(plan.cluster, node);
    key.layout.insert(key.layout.end(),
                      {static_cast<double>(node - first_node), intra.bandwidth_bytes_per_s,
                       intra.latency_s, share.bandwidth_bytes_per_s, share.latency_s});
  }
  return key;
}

ReplicaCost replica_cost(const plan::Plan& plan, const plan::Stage& stage, int replica) {
  const std::vector<int> devices = stage.replica_devices(replica);
  const plan::DeviceProfile& profile = plan.cluster.profile_of(devices.front());
  const double samples = stage.shares.at(replica);
  ReplicaCost out;
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    const plan::Layer& layer = plan.model.layers.at(l);
    const LayerCost cost =
        layer_cost(layer, profile, plan.precision, stage.tp, samples, stage.recompute,
                   stage.sequence_parallel);
    out.forward_s += cost.forward_s;
    out.backward_s += cost.backward_s;
    out.recompute_s += cost.recompute_s;
    out.model_flops += 3.0 * cost.forward_flops;
    // Sequence parallelism replaces each all-reduce by an all-gather and a reduce-scatter of
    // the same bytes (Korthikanti et al. 2022, Section 4.2.2).
    const Bytes tp_bytes = layer.tp_allreduce_bytes * samples;
    const Seconds tp_s = stage.sequence_parallel ? all_gather_s(plan.cluster, devices, tp_bytes) +
                                                       reduce_scatter_s(plan.cluster, devices, tp_bytes)
                                                 : allreduce_s(plan.cluster, devices, tp_bytes);
    out.tp_forward_s += tp_s;
    if (stage.recompute == plan::Recompute::full) out.tp_recompute_s += tp_s;
  }
  return out;
}

/// Optimizer step of one device: a memory-bound pass reading the gradients and reading and
/// writing the optimizer state and the weights, over the parameters it updates (or the
/// profile's measured op bandwidth of the optimizer, on devices where it is compute-bound).
Seconds optimizer_s(const plan::Plan& plan, const plan::Stage& stage, int replica) {
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer);
  double parameters = 0;
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    parameters += parameters_per_device(plan.model.layers.at(l), stage.tp);
  }
  if (stage.shard_optimizer) parameters /= stage.dp();
  const Bytes bytes = parameters * (state.gradients + 2.0 * state.optimizer + 2.0 * state.weights);
  if (bytes <= 0) return 0;
  const plan::DeviceProfile& profile = plan.cluster.profile_of(stage.replica_devices(replica)[0]);
  // A profile that measured the optimizer (a CPU core: compute-bound) gives its own figure.
  const BytesPerSecond measured = profile.op_bandwidth(plan.model.training.optimizer);
  if (measured > 0) return bytes / measured;
  return bytes / (profile.memory_bandwidth_bytes_per_s * profile.memory_efficiency.at(bytes));
}

/// DP gradient reduction of a stage: the tp groups reduce their shards at once; replica
/// devices of tp rank 0 stand for all of them. Buckets are all-reduced; with sharded
/// gradients (ZeRO-2) they are reduce-scattered instead, and the updated weights are
/// all-gathered after the optimizer step (dp_gather_s).
void fill_dp(const plan::Plan& plan, const plan::Stage& stage, const SimulatorOptions& options,
             StageCost* out) {
  if (stage.dp() <= 1) return;
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer);
  double parameters = 0;
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    parameters += parameters_per_device(plan.model.layers.at(l), stage.tp);
  }
  const Bytes gradient_bytes = parameters * state.gradients;
  if (gradient_bytes <= 0) return;
  std::vector<int> group;
  for (int r = 0; r < stage.dp(); ++r) group.push_back(stage.devices.at(r * stage.tp));
  out->dp_buckets = std::max(1, static_cast<int>(std::ceil(gradient_bytes / options.dp_bucket_bytes)));
  const Bytes bucket_bytes = gradient_bytes / out->dp_buckets;
  out->dp_bucket_s = stage.shard_gradients ? reduce_scatter_s(plan.cluster, group, bucket_bytes)
                                           : allreduce_s(plan.cluster, group, bucket_bytes);
  if (stage.shard_gradients) {
    out->dp_gather_s = all_gather_s(plan.cluster, group, parameters * state.weights);
  }
}

/// Bridge transfers from `from` to `to`: each moves its samples' output bytes from the
/// sender's device to the receiver's first device.
std::vector<TransferCost> bridge_costs(const plan::Plan& plan, const plan::Stage& from,
                                       const plan::Stage& to) {
  const Bytes bytes_per_sample = plan.model.layers.at(from.end_layer - 1).output_bytes;
  std::vector<TransferCost> out;
  for (const plan::BridgeTransfer& t : plan::bridge_transfers(from, to)) {
    const int src = plan::bridge_source_device(from, t.from_replica, 0);
    const int dst = to.devices.at(t.to_replica * to.tp);
    out.push_back({t.from_replica, t.to_replica,
                   p2p_s(plan.cluster, src, dst, bytes_per_sample * t.samples)});
  }
  return out;
}

}  // namespace

CostTable build_cost_table(const plan::Plan& plan, const SimulatorOptions& options) {
  CostTable table;
  table.stages.resize(plan.stages.size());
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const plan::Stage& stage = plan.stages[s];
    StageCost& cost = table.stages[s];
    table.max_replicas = std::max(table.max_replicas, stage.dp());
    // Replicas with the same share, device model and node layout cost the same: compute once.
    std::map<ReplicaKey, int> first_alike;
    for (int r = 0; r < stage.dp(); ++r) {
      const auto [it, inserted] = first_alike.emplace(replica_key(plan, stage, r), r);
      cost.replicas.push_back(inserted ? replica_cost(plan, stage, r) : cost.replicas[it->second]);
      cost.optimizer_s.push_back(inserted ? optimizer_s(plan, stage, r)
                                          : cost.optimizer_s[it->second]);
    }
    fill_dp(plan, stage, options, &cost);
    if (s + 1 < plan.stages.size()) cost.to_next = bridge_costs(plan, stage, plan.stages[s + 1]);
  }
  return table;
}

}  // namespace whale::sim

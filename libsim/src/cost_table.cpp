// File: cost_table.cpp
// Fills the CostTable from the op, collective and memory models.
#include "cost_table.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>

#include "whale/plan/bridge.h"
#include "whale/plan/cache_warmth.h"
#include "whale/plan/gradient_buckets.h"
#include "whale/plan/moe_layer.h"
#include "whale/sim/calibration.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/deepep_exchange.h"
#include "whale/sim/link_calibration.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/op_cost.h"
#include "whale/sim/cache_working_set.h"
#include "mixed_tp_exchange.h"

namespace whale::sim {
namespace {

/// What a replica's costs depend on: its share, its device models, the experts its busiest ep
/// rank holds and, per tp device, its node relative to the first device's and that node's
/// links (all that allreduce_s reads), and the warm fractions of its layers (the other
/// stages its device holds).
struct ReplicaKey {
  int share = 0;
  std::string model;
  int experts_held = 0;
  double token_scale = 1;  // plan::expert_token_scale
  std::vector<double> layout;
  std::vector<double> warm_fractions;  // layer_warm_fractions
  bool operator<(const ReplicaKey& o) const {
    return std::tie(share, model, experts_held, token_scale, layout, warm_fractions) <
           std::tie(o.share, o.model, o.experts_held, o.token_scale, o.layout, o.warm_fractions);
  }
};

ReplicaKey replica_key(const plan::Plan& plan, const plan::Stage& stage, int replica, double passes) {
  ReplicaKey key;
  key.share = stage.shares.at(replica);
  key.warm_fractions = layer_warm_fractions(plan, stage, replica, passes);
  if (plan.model.moe) {
    const int experts = plan.model.moe->experts;
    key.experts_held = stage.experts_held(plan::busiest_ep_rank(stage, replica, experts), experts);
    key.token_scale = plan::expert_token_scale(stage, replica);
  }
  const std::vector<int> devices = stage.replica_devices(replica);
  std::vector<std::string> models;  // the device models it is priced at (slowest_layer_cost)
  for (int d : devices) {
    const std::string& model = plan.cluster.devices.at(d).model;
    if (std::find(models.begin(), models.end(), model) == models.end()) {
      models.push_back(model);
      key.model += model + "\n";
    }
  }
  const int first_node = plan.cluster.devices.at(devices.front()).node;
  int previous_node = -1;
  plan::Link intra, share;  // of previous_node: a replica's devices mostly share a node
  for (int d : devices) {
    const int node = plan.cluster.devices.at(d).node;
    if (node != previous_node) {
      intra = calibrated_intra_link(plan.cluster, node);
      share = device_network_share(plan.cluster, node);
      previous_node = node;
    }
    key.layout.insert(key.layout.end(),
                      {static_cast<double>(node - first_node), intra.bandwidth_bytes_per_s,
                       intra.latency_s, share.bandwidth_bytes_per_s, share.latency_s});
  }
  return key;
}

/// Per-device forward GEMM flops of an MoE layer at the mean expert load of ep rank `ep_rank`'s
/// experts (what model flops and MFU count: the imbalance costs time, not useful work).
Flops mean_forward_flops(const plan::Layer& layer, const plan::Stage& stage, int ep_rank,
                         double token_scale, double samples) {
  Flops flops = 0;
  for (const plan::GemmOp& gemm : plan::layer_at_expert_layout(layer, stage, false, ep_rank, token_scale).gemms)
    flops += gemm_flops(gemm, stage.tp, samples);
  return flops;
}

/// The token exchange of one forward of an MoE layer on the first device of `replica`: the
/// dispatch and the combine all-to-alls among its ep group (its expert-dp replica and
/// expert-tp rank, Stage::expert_parallel_group), at the busiest receiver's bytes (the group's
/// mean share, moe_layer.h) or the largest sender's (uneven shares), whichever is more; with
/// expert_tp > 1, the dispatched tokens all-gathered over the expert-tp group and the expert
/// outputs reduce-scattered back (Megatron-Core's all-to-all dispatcher). Under the deepep
/// dispatcher the all-to-alls are DeepEP's deduplicated exchanges (deepep_exchange.h) of the
/// same tokens. The backward moves the same bytes again.
Seconds expert_exchange_s(const plan::Plan& plan, const plan::Stage& stage, int replica,
                          const plan::Layer& layer) {
  const int etp = stage.expert_tp_degree();
  const int index = stage.replica_offset(replica);  // the replica's first device, in the stage's order
  const int expert_replica = index / (stage.ep * etp);
  const int expert_tp_rank = index % etp;
  const std::vector<int> shares = plan::expert_group_shares(stage, replica);
  const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / stage.ep;
  const double most = *std::max_element(shares.begin(), shares.end());
  const Bytes bytes = std::max(plan::all_to_all_bytes_per_device(layer, stage, mean, true),
                               plan::all_to_all_bytes_per_device(layer, stage, most, false));
  const std::vector<int> group = stage.expert_parallel_group(expert_replica, expert_tp_rank);
  Seconds time_s = 0;
  if (plan.moe_dispatcher == plan::MoeDispatcher::deepep) {
    // DeepEP dedups by the expert counts themselves: the bytes at the imbalance alone.
    const int experts = static_cast<int>(layer.experts), top_k = plan.model.moe->top_k;
    std::vector<int> counts;
    for (int rank = 0; rank < stage.ep; ++rank) counts.push_back(stage.experts_held(rank, experts));
    const Bytes copies = std::max(plan::all_to_all_bytes_per_device(layer, stage, mean, false) * layer.expert_load_imbalance,
                                  plan::all_to_all_bytes_per_device(layer, stage, most, false));
    time_s = 2.0 * deepep_exchange_s(plan.cluster, group, counts, top_k, copies / top_k);
  } else {
    time_s = 2.0 * all_to_all_s(plan.cluster, group, bytes);
  }
  if (etp > 1) {
    const int first = index - expert_tp_rank;
    const std::vector<int> group(stage.devices.begin() + first, stage.devices.begin() + first + etp);
    time_s += all_gather_s(plan.cluster, group, bytes * etp) + reduce_scatter_s(plan.cluster, group, bytes * etp);
  }
  return time_s;
}

/// One device model of a replica, as its layers are priced on it: the profile, the precision
/// its GEMMs run in, and the profile blended with the replica's warm fraction once needed.
struct DevicePricing {
  const plan::DeviceProfile* profile = nullptr;
  plan::Precision gemm_precision = plan::Precision::fp32;
  std::optional<plan::DeviceProfile> warm;
};

/// The layer's cost on the slowest of `pricings` pass by pass: the devices of a tensor-parallel
/// replica meet in its collectives after every layer's forward and backward, so each pass
/// ends when its slowest device's does. One device model: its cost alone.
LayerCost slowest_layer_cost(const plan::Layer& layer, std::vector<DevicePricing>& pricings,
                             double warm_fraction, int tp, double samples, plan::Recompute recompute,
                             bool sequence_parallel) {
  LayerCost slowest;
  bool first = true;
  for (DevicePricing& pricing : pricings) {
    // Every layer of a device with operands in the last-level cache has the same warm
    // fraction (cache_working_set.h), so one blended profile serves them all.
    if (warm_fraction > 0 && !pricing.warm) pricing.warm = plan::with_warm_fraction(*pricing.profile, warm_fraction);
    const plan::DeviceProfile& profile = warm_fraction > 0 ? *pricing.warm : *pricing.profile;
    const LayerCost cost =
        layer_cost(layer, profile, pricing.gemm_precision, tp, samples, recompute, sequence_parallel);
    if (first) {
      slowest = cost;
      first = false;
      continue;
    }
    slowest.forward_s = std::max(slowest.forward_s, cost.forward_s);
    slowest.backward_s = std::max(slowest.backward_s, cost.backward_s);
    slowest.backward_weight_s = std::max(slowest.backward_weight_s, cost.backward_weight_s);
    slowest.recompute_s = std::max(slowest.recompute_s, cost.recompute_s);
    slowest.measured = slowest.measured && cost.measured;
  }
  return slowest;
}

/// `buckets`: the stage's gradient buckets, empty when it has no dp reduction; `warm_fractions`:
/// layer_warm_fractions of the replica (empty: every layer cold). The replica
/// computes at its own tp (Stage::as_replica), its tp collectives on its own devices, each
/// pass at the pace of its slowest device model (slowest_layer_cost).
ReplicaCost replica_cost(const plan::Plan& plan, const plan::Stage& whole, int replica,
                         const std::vector<plan::GradientBucket>& buckets,
                         const std::vector<double>& warm_fractions) {
  const plan::Stage stage = whole.as_replica(replica);
  const std::vector<int> devices = stage.replica_devices(replica);
  const double samples = stage.shares.at(replica);
  ReplicaCost out;
  out.bucket_backward_s.assign(buckets.size(), 0);
  out.bucket_tp_s.assign(buckets.size(), 0);
  out.bucket_weight_s.assign(buckets.size(), 0);
  std::size_t bucket = buckets.size();  // the bucket of layer l: buckets run from the last layer
  // GEMMs run in each device's effective precision (TF32 allowed, documented fallbacks).
  std::vector<DevicePricing> pricings;
  Seconds overhead_s = 0;  // the fitted fixed cost per micro-batch, the largest of the models'
  for (const plan::DeviceProfile* profile : plan.cluster.distinct_profiles(devices)) {
    pricings.push_back({profile, plan::effective_gemm_precision(plan.precision, plan.framework_precision, *profile), {}});
    overhead_s = std::max(overhead_s, profile->calibration.micro_batch_overhead_s);
  }
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    const double warm_fraction = warm_fractions.empty() ? 0.0 : warm_fractions[l - stage.first_layer];
    const plan::Layer& model_layer = plan.model.layers.at(l);
    const bool moe = model_layer.experts > 0;
    // An MoE layer as this replica runs it: its device holding the most experts, at the
    // busiest load, sets the time.
    const int ep_rank = moe ? plan::busiest_ep_rank(stage, replica, static_cast<int>(model_layer.experts)) : 0;
    const double token_scale = moe ? plan::expert_token_scale(stage, replica) : 1.0;
    const plan::Layer busiest = moe ? plan::layer_at_expert_layout(model_layer, stage, true, ep_rank, token_scale) : plan::Layer{};
    const plan::Layer& layer = moe ? busiest : model_layer;
    const LayerCost cost = slowest_layer_cost(layer, pricings, warm_fraction, stage.tp, samples,
                                              stage.recompute, stage.sequence_parallel);
    out.forward_s += cost.forward_s;
    out.backward_s += cost.backward_s;
    out.backward_weight_s += cost.backward_weight_s;
    out.recompute_s += cost.recompute_s;
    out.model_flops += 3.0 * (moe ? mean_forward_flops(model_layer, stage, ep_rank, token_scale, samples) : cost.forward_flops);
    // Sequence parallelism replaces each all-reduce by an all-gather and a reduce-scatter of
    // the same bytes (Korthikanti et al. 2022, Section 4.2.2).
    const Bytes tp_bytes = layer.tp_allreduce_bytes * samples;
    const Seconds tp_s = (stage.sequence_parallel ? all_gather_s(plan.cluster, devices, tp_bytes) +
                                                        reduce_scatter_s(plan.cluster, devices, tp_bytes)
                                                  : allreduce_s(plan.cluster, devices, tp_bytes)) +
                         (moe ? expert_exchange_s(plan, stage, replica, model_layer) : 0.0);
    out.tp_forward_s += tp_s;
    // Under sequence parallelism a layer keeps only its shard of the inputs of the
    // column-parallel GEMMs (the QKV and the first MLP GEMM) and all-gathers them again in the
    // backward for the weight gradients (Korthikanti et al. 2022, Section 4.2.2; Megatron-LM's
    // tensor-parallel linear layer; whale-run's GPT block re-enters its region the same way):
    // one more all-gather of the same bytes.
    const Seconds tp_backward_s =
        tp_s + (stage.sequence_parallel ? all_gather_s(plan.cluster, devices, tp_bytes) : 0.0);
    out.tp_backward_s += tp_backward_s;
    if (stage.recompute == plan::Recompute::full && recomputed_in_full(layer.kind)) {
      out.tp_recompute_s += tp_s;
    }
    if (buckets.empty()) continue;
    if (bucket == buckets.size() || l == buckets[bucket].end_layer) --bucket;
    out.bucket_backward_s[bucket] += cost.backward_s;
    out.bucket_tp_s[bucket] += tp_backward_s;
    out.bucket_weight_s[bucket] += cost.backward_weight_s;
  }
  // The fitted fixed cost per micro-batch of the stage, once forward and once backward; the
  // backward runs its buckets from the last layer, so bucket 0 starts it.
  out.forward_s += overhead_s;
  out.backward_s += overhead_s;
  if (!out.bucket_backward_s.empty()) out.bucket_backward_s.front() += overhead_s;
  return out;
}

/// Optimizer step of one device: a memory-bound pass reading the gradients and reading and
/// writing the optimizer state and the weights, over the parameters it updates (or the
/// profile's measured op bandwidth of the optimizer, on devices where it is compute-bound), or
/// the measured step per parameter of the profile's layer times. A replica of several device
/// models steps at its slowest's pace (the weights are all-gathered or used together next).
Seconds optimizer_s(const plan::Plan& plan, const plan::Stage& whole, int replica) {
  const plan::Stage stage = whole.as_replica(replica);  // its parameters at the replica's tp
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer, plan.framework_precision);
  const int ep_rank = plan.model.moe ? plan::busiest_ep_rank(stage, replica, plan.model.moe->experts) : 0;
  double parameters = 0;
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    parameters += parameters_per_device(plan.model.layers.at(l), stage, ep_rank);
  }
  if (stage.shard_optimizer) parameters /= stage.dp();
  const Bytes bytes = parameters * (state.gradients + 2.0 * state.optimizer + 2.0 * state.weights);
  Seconds slowest_s = 0;
  for (const plan::DeviceProfile* profile : plan.cluster.distinct_profiles(stage.replica_devices(replica))) {
    Seconds step_s = 0;
    if (profile->layer_times.optimizer_s_per_parameter > 0) {
      // A measured step per parameter (a Megatron-LM log's optimizer timer) is the framework's own.
      step_s = parameters * profile->layer_times.optimizer_s_per_parameter;
    } else if (bytes > 0) {
      // A profile that measured the optimizer (a CPU core: compute-bound) gives its own figure.
      const BytesPerSecond measured = profile->op_bandwidth(plan.model.training.optimizer);
      step_s = calibrated_memory_op_s(
          measured > 0 ? bytes / measured
                       : bytes / (profile->memory_bandwidth_bytes_per_s * profile->memory_efficiency.at(bytes)),
          *profile);
    }
    slowest_s = std::max(slowest_s, step_s);
  }
  return slowest_s;
}

/// The replica devices of tp rank 0 of a stage: they stand for every tp group's reduction,
/// which all run at once.
std::vector<int> dp_group(const plan::Stage& stage) {
  std::vector<int> group;
  for (int r = 0; r < stage.dp(); ++r) group.push_back(stage.devices.at(stage.replica_offset(r)));
  return group;
}

/// The expert-data-parallel group of a mixture-of-experts stage that stands for all of them:
/// ep rank 0 and expert-tp rank 0 (Stage::expert_data_parallel_group).
std::vector<int> expert_dp_group(const plan::Stage& stage) { return stage.expert_data_parallel_group(0, 0); }

/// Whether a stage of dp 1 reduces gradients all the same (Plan::reduces_gradients): then only
/// its routed experts' gradients, over the expert-dp group.
bool reduces_experts_only(const plan::Plan& plan, int s) {
  return plan.stages.at(s).dp() == 1 && plan.reduces_gradients(s);
}

/// The devices that stand for a stage's gradient reduction: its dp group, or at dp 1 its
/// expert-dp group.
std::vector<int> gradient_group(const plan::Plan& plan, int s) {
  const plan::Stage& stage = plan.stages.at(s);
  return reduces_experts_only(plan, s) ? expert_dp_group(stage) : dp_group(stage);
}

/// The data-parallel reduction of each gradient bucket of a stage: an all-reduce, or with
/// sharded gradients (ZeRO-2) a reduce-scatter; between replicas at different tp, the
/// all-reduces of each finest shard (mixed_tp_exchange.h); at dp 1, the bucket's routed-expert
/// bytes over the expert-dp group.
std::vector<Seconds> bucket_allreduce_s(const plan::Plan& plan, int s,
                                        const std::vector<plan::GradientBucket>& buckets) {
  const plan::Stage& stage = plan.stages.at(s);
  const bool experts_only = reduces_experts_only(plan, s);
  const std::vector<int> group = gradient_group(plan, s);
  std::vector<Seconds> out;
  for (const plan::GradientBucket& b : buckets) {
    if (stage.mixed_tp()) {
      out.push_back(mixed_tp_exchange_s(plan, stage, b.first_layer, b.end_layer));
      continue;
    }
    const Bytes bytes = experts_only ? b.expert_bytes : b.bytes;
    out.push_back(stage.shard_gradients ? reduce_scatter_s(plan.cluster, group, bytes)
                                        : allreduce_s(plan.cluster, group, bytes));
  }
  return out;
}

/// A sharded optimizer (ZeRO-1 and ZeRO-2): each replica updates only its shard, so the
/// replicas all-gather the updated weights after the optimizer step (whale-run's
/// share_parameters): at dp 1, the routed experts' weights over the expert-dp group (the dense
/// ones are whole on every device); 0 otherwise.
Seconds weight_gather_s(const plan::Plan& plan, int s) {
  const plan::Stage& stage = plan.stages.at(s);
  const bool experts_only = reduces_experts_only(plan, s);
  if (!plan.reduces_gradients(s) || !stage.shard_optimizer) return 0;
  const StateBytesPerParam state =
      state_bytes_per_param(plan.precision, plan.model.training.optimizer, plan.framework_precision);
  double parameters = 0;
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    const plan::Layer& layer = plan.model.layers.at(l);
    parameters += experts_only ? plan::routed_parameters_per_device(layer, stage)
                               : parameters_per_device(layer, stage);
  }
  return all_gather_s(plan.cluster, gradient_group(plan, s),
                      parameters * state.weights);
}

/// Bridge transfers from `from` to `to`. Every tp rank of a receiving replica takes its input
/// from one device of the sending replica (plan::bridge_source_device), all at once, each pair
/// on its own link share (concurrent_p2p_s): the full activations of the transfer's samples, or
/// under sequence parallelism on both stages its 1/tp slice of the sequence (Megatron-LM sends
/// (sequence / tp, micro-batch, hidden) per rank: forward_backward_pipelining_with_interleaving
/// and get_tensor_shapes in megatron/core/pipeline_parallel/schedules.py). A sender device that
/// feeds several receivers (a receiver at a higher tp) sends to them one after another; the
/// busiest pair sets the transfer's time.
std::vector<TransferCost> bridge_costs(const plan::Plan& plan, const plan::Stage& from,
                                       const plan::Stage& to) {
  const Bytes bytes_per_sample = plan.model.layers.at(from.end_layer - 1).output_bytes;
  std::vector<TransferCost> out;
  for (const plan::BridgeTransfer& t : plan::bridge_transfers(from, to)) {
    const int from_tp = from.replica_tp(t.from_replica);
    const int to_tp = to.replica_tp(t.to_replica);
    const bool sliced = from.sequence_parallel && to.sequence_parallel;
    const Bytes bytes = bytes_per_sample * t.samples / (sliced ? to_tp : 1);
    const int receivers_per_sender = (to_tp + from_tp - 1) / from_tp;
    const std::vector<int> receivers = to.replica_devices(t.to_replica);
    Seconds time_s = 0;
    for (int rank = 0; rank < to_tp; ++rank) {
      const int src = plan::bridge_source_device(from, t.from_replica, rank);
      time_s = std::max(time_s, receivers_per_sender *
                                    concurrent_p2p_s(plan.cluster, src, receivers.at(rank), bytes));
    }
    out.push_back({t.from_replica, t.to_replica, time_s});
  }
  return out;
}

/// Megatron-LM's embedding group: when the LM head is tied to the token table and the first and
/// last stages run on different device groups, the last stage holds a copy of the table, and
/// once per step the two copies' gradients are all-reduced over {first stage, last stage}
/// devices (tp rank 0 of replica 0 stands for every pair, which all run at once). Bytes: the
/// first stage's vocabulary-parallel shard of the table, vocabulary x hidden / tp, in the
/// gradient precision. 0 when nothing is tied across groups (where both stages run on one group,
/// each of its devices adds its two copies' gradients itself).
Seconds tied_embedding_s(const plan::Plan& plan) {
  const int last = static_cast<int>(plan.stages.size()) - 1;
  if (!plan.last_stage_holds_table_copy() || plan.group_of_stage(0) == plan.group_of_stage(last)) return 0;
  const plan::Stage& first = plan.stages.front();
  const Bytes bytes = static_cast<double>(plan.model.vocabulary) * plan.model.hidden / first.replica_tp(0) *
                      plan::gradient_bytes_per_element(plan.precision, plan.framework_precision);
  return allreduce_s(plan.cluster, {first.devices.front(), plan.stages.back().devices.front()}, bytes);
}

}  // namespace

CostTable build_cost_table(const plan::Plan& plan, const std::vector<std::vector<MemoryBreakdown>>& memories) {
  CostTable table;
  table.stages.resize(plan.stages.size());
  // Every device group runs the same number of stages: its chunks.
  const int stages_per_group = static_cast<int>(plan.stages.size()) / plan.pipeline_groups();
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const plan::Stage& stage = plan.stages[s];
    const int group = plan.group_of_stage(static_cast<int>(s));
    StageCost& cost = table.stages[s];
    // The same buckets as the schedule program's reduce_bucket instructions.
    const std::vector<plan::GradientBucket> buckets =
        plan.reduces_gradients(static_cast<int>(s)) ? plan::gradient_buckets(plan, static_cast<int>(s))
                       : std::vector<plan::GradientBucket>{};
    // Replicas with the same share, device model and node layout cost the same: compute once.
    std::map<ReplicaKey, int> first_alike;
    for (int r = 0; r < stage.dp(); ++r) {
      const double passes = passes_in_flight(memories.at(group).at(r).peak_in_flight, stages_per_group);
      const auto [it, inserted] = first_alike.emplace(replica_key(plan, stage, r, passes), r);
      cost.replicas.push_back(inserted ? replica_cost(plan, stage, r, buckets, it->first.warm_fractions)
                                       : cost.replicas[it->second]);
      cost.optimizer_s.push_back(inserted ? optimizer_s(plan, stage, r)
                                          : cost.optimizer_s[it->second]);
    }
    cost.bucket_allreduce_s = bucket_allreduce_s(plan, static_cast<int>(s), buckets);
    cost.dp_gather_s = weight_gather_s(plan, static_cast<int>(s));
    if (s + 1 < plan.stages.size()) cost.to_next = bridge_costs(plan, stage, plan.stages[s + 1]);
  }
  const Seconds tied_s = tied_embedding_s(plan);
  if (tied_s > 0) {
    table.stages.front().tied_embedding_s = tied_s;
    table.stages.back().tied_embedding_s = tied_s;
  }
  return table;
}

}  // namespace whale::sim

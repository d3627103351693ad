// File: search_estimate.h
// AnalyticModel: the planner's quick closed-form costs (compute roofline with the profiles'
// efficiency curves, alpha-beta communication, Megatron-style memory). It only orders and
// prunes candidates; the final ranking always comes from the CostModel (the simulator).
#pragma once

#include <map>
#include <unordered_map>
#include <string>
#include <tuple>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/data_parallel_ring.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_experts.h"

namespace whale::plan {

/// Memory of one device, split by what holds it.
struct MemoryNeed {
  Bytes state_bytes = 0;        // weights, gradients and optimizer state
  Bytes activation_bytes = 0;   // activations kept for backward, all micro-batches in flight
  Bytes total() const { return state_bytes + activation_bytes; }
};

/// Compute seconds of one replica (device model, tp, share) as prefix sums over the layers.
struct ComputeTable {
  std::vector<double> forward_s;     // forward seconds of layers [0, i)
  std::vector<double> backward_s;    // backward seconds of layers [0, i)
  std::vector<double> selective_s;   // attention-core seconds (what selective recomputes)
  Seconds forward(int first, int end) const { return forward_s[end] - forward_s[first]; }
  Seconds backward(int first, int end) const { return backward_s[end] - backward_s[first]; }
  /// Extra backward seconds that recomputation `r` costs.
  Seconds recompute(int first, int end, Recompute r) const {
    return r == Recompute::none ? 0.0
           : r == Recompute::full ? forward(first, end)
                                  : selective_s[end] - selective_s[first];
  }
};

/// The strategies a search may use beyond those whale-run executes today (plan_runtime.h).
struct SearchStrategies {
  /// Sequence parallelism on every stage with tp > 1 (where tp divides the sequence). It is
  /// never slower and never needs more memory than tensor parallelism alone in the simulator
  /// (the same bytes through an all-gather + reduce-scatter pair costs an all-reduce; memory
  /// ops and activations shrink by tp), so the search turns it on rather than branching.
  bool sequence_parallel = true;
  /// ZeRO-2: gradients sharded over the dp replicas, the last memory-saving rung.
  bool shard_gradients = true;
};

class AnalyticModel {
 public:
  /// Keeps references: `cluster` and `model` must outlive it. Not thread-safe (it caches).
  AnalyticModel(const Cluster& cluster, const Model& model, SearchStrategies strategies = {});

  const SearchStrategies& strategies() const { return strategies_; }
  /// Whether a stage at tensor-parallel degree tp runs sequence-parallel: allowed, tp > 1 and
  /// tp divides the model's sequence.
  bool sequence_parallel(int tp) const;

  /// The compute table of one replica; the reference stays valid while this model lives.
  const ComputeTable& table(const std::string& device_model, int tp, int share);
  /// Forward compute seconds of layers [first, end) for `share` samples on one replica of
  /// `device_model` at tensor-parallel degree tp (no communication).
  Seconds forward_s(const std::string& device_model, int tp, int share, int first, int end);
  /// Backward compute seconds (GEMMs twice, memory ops once), without recomputation.
  Seconds backward_s(const std::string& device_model, int tp, int share, int first, int end);
  /// Extra backward seconds that recomputation `r` costs.
  Seconds recompute_s(const std::string& device_model, int tp, int share, int first, int end,
                      Recompute r);
  /// Tensor-parallel all-reduce seconds of one forward pass (the same again in backward) over
  /// `link` (a ring inside the replica's node).
  Seconds tp_comm_s(const Link& link, int tp, int share, int first, int end) const;
  /// Data-parallel gradient reduction seconds of layers [first, end) on `ring`.
  Seconds dp_comm_s(const DataParallelRing& ring, int tp, int dp, int first, int end) const;
  /// A sharded optimizer's (ZeRO-1 and -2) all-gather of the updated weights of layers [first, end) on `ring`:
  /// half an all-reduce of the weights' bytes.
  Seconds dp_gather_s(const DataParallelRing& ring, int tp, int dp, int first, int end) const;
  /// Bytes of the activation that leaves layer `end - 1`, per sample.
  Bytes boundary_bytes(int end) const;
  /// Memory of one device of model `device_model` of a stage holding layers [first, end) at
  /// (tp, dp), with `share` samples per micro-batch and `in_flight` micro-batches of activations
  /// kept. The device model's profile sets, as in the simulator's memory model, the attention
  /// core's kept bytes (framework_memory.attention, plan::attention_kept_bytes), the scale of
  /// the activations (calibration.activation_memory_scale) and the optimizer's fp32 gradient
  /// copy (framework_memory.fp32_gradient_copy, plan::held_optimizer_bytes_per_param).
  /// Sequence parallelism follows sequence_parallel(tp); `shard_gradients` divides the
  /// gradients by dp as well (ZeRO-2). A split backward (zb-h1, `weight_passes` >= 0) holds
  /// the weight-pass tensors (weight_pass_bytes) of `weight_passes` micro-batches besides, and
  /// one input pass swaps a micro-batch's activations for its weight-pass tensors: the larger
  /// of the two counts. -1: no split backward.
  MemoryNeed memory(const std::string& device_model, int first, int end, int tp, int dp, int share,
                    int in_flight, Recompute r, bool shard_optimizer, bool shard_gradients = false,
                    int weight_passes = -1) const;
  /// A device model's memory figures (private contents): looked up by name once, so that the
  /// search's hot loops ask memory() without comparing names. Valid as long as the model.
  struct DeviceMemory;
  const DeviceMemory& device_memory(const std::string& device_model) const;
  /// As memory() above, for the device model of `device` (device_memory).
  MemoryNeed memory(const DeviceMemory& device, int first, int end, int tp, int dp, int share,
                    int in_flight, Recompute r, bool shard_optimizer, bool shard_gradients = false,
                    int weight_passes = -1) const;
  /// State bytes on one device of model `device_model` of the last stage's copy of a tied token
  /// table (held when the first and last stage run on different groups,
  /// Plan::last_stage_holds_table_copy), as the simulator counts it; 0 for an untied model.
  Bytes table_copy_bytes(const std::string& device_model, int tp, int dp, bool shard_optimizer,
                         bool shard_gradients) const;
  /// Seconds of the optimizer step of layers [first, end) on one device (memory bound).
  Seconds optimizer_s(const std::string& device_model, int first, int end, int tp, int dp,
                      bool shard_optimizer) const;
  /// Memory a device model's tensors may use: its capacity less the framework's reserve and
  /// allocator slack and the calibrated reserve (plan::tensor_capacity_bytes).
  Bytes usable_bytes(const std::string& device_model) const;

  int layers() const { return static_cast<int>(model_.layers.size()); }
  const Cluster& cluster() const { return cluster_; }
  const Model& model() const { return model_; }

 private:
  static double range(const std::vector<double>& p, int first, int end) { return p[end] - p[first]; }

  const Cluster& cluster_;
  const Model& model_;
  SearchStrategies strategies_;
  Precision precision_;
  double element_bytes_;     // bytes per element at precision_
  double gradient_bytes_;    // bytes per gradient element as accumulated and reduced
  double optimizer_bytes_;   // optimizer-state bytes per parameter
  std::vector<std::string> model_names_;                    // index of a device model
  std::unordered_map<unsigned long long, ComputeTable> cache_;  // (model index, tp, share)
  // Per layer and op: whether selective recomputation redoes it (the attention core).
  std::vector<std::vector<bool>> gemm_attention_, memory_attention_;
  // Model-only prefix sums over layers:
  std::vector<double> params_split_, params_replicated_, tp_bytes_, tp_ops_;
  // Mixture of experts: the routed experts' parameters (also in params_split_) and the bytes of
  // one all-to-all per sample at tp 1 times the load imbalance, prefix sums over layers; the
  // devices of the cluster's smallest node, which bound an expert-parallel group.
  std::vector<double> params_expert_, all_to_all_bytes_;
  int node_devices_ = 1;
  ExpertShardTable expert_shards_;   // of the model and node_devices_
  /// Parameters one device holds of layers [first, end) at (tp, dp): the dense split part / tp,
  /// the replicated, the experts / ep x expert_tp (ExpertShardTable), and that expert part alone.
  double device_parameters(int first, int end, int tp, int dp, double* experts = nullptr) const;
  std::vector<double> act_split_, act_input_;
  // The largest Layer::backward_buffer_bytes_split and _replicated of any layer, per sample: a
  // bound on the stage's buffers the simulator adds under stage_buffer_cache.
  double backward_buffers_split_ = 0, backward_buffers_replicated_ = 0;
  double largest_input_ = 0;  // the largest Layer::input_bytes, per sample

 public:
  /// The largest of per-layer values over a range of layers, in O(1): a sparse table whose
  /// level k holds the largest over [i, i + 2^k).
  struct RangeMax {
    RangeMax() = default;
    explicit RangeMax(std::vector<double> values);
    double of(int first, int end) const;   // 0 for an empty range
    std::vector<std::vector<double>> levels;
  };

 public:
  // The memory figures of one device model's profile (the simulator's memory model reads them
  // from the profile of a replica's devices).
  struct DeviceMemory {
    // plan::attention_kept_bytes and plan::replicated_kept_bytes per sample under the
    // profile's framework_memory, prefix sums over layers.
    std::vector<double> act_attention, act_replicated;
    // plan::loss_backward_transient_bytes per sample at the profile's cross entropy, prefix
    // sums over layers.
    std::vector<double> loss_transient;
    // plan::head_norm_backward_bytes per sample (at tp 1, the input's gradient counted),
    // prefix sums over layers.
    std::vector<double> head_norm_backward;
    // The largest single-layer activation per sample (tp 1) with those, the most selective
    // recomputation rebuilds in one layer (selective_rebuilt_bytes) and the largest kept
    // replicated bytes, over a range of layers.
    RangeMax act_max, selective_rebuilt_max, replicated_max;
    double activation_scale = 1.0;  // calibration.activation_memory_scale
    double optimizer_bytes = 0;     // plan::held_optimizer_bytes_per_param
    double unsharded_optimizer_bytes = 0;  // plan::unsharded_optimizer_bytes_per_param
    bool stage_buffer_cache = false;  // framework_memory's
    bool gradient_bucket_copy = false;  // framework_memory's
    bool sharded_gradients_held_whole = false;  // framework_memory's
  };

 private:
  std::map<std::string, DeviceMemory> device_memory_;
  // weight_pass_bytes per sample, prefix sums over layers, at tp = 2^k (kWeightPassLevels).
  static constexpr int kWeightPassLevels = 9;
  std::vector<std::vector<double>> weight_pass_;
  Bytes weight_pass_range(int first, int end, int tp) const;
  /// The bytes of `params` parameters' gradients that a framework copying its gradients into
  /// communication buckets holds a second time (framework_memory.gradient_bucket_copy: data
  /// parallel, gradients not sharded), as the simulator counts them.
  Bytes bucket_copy_bytes(const DeviceMemory& device, double params, int dp, bool shard_gradients) const;
};

}  // namespace whale::plan

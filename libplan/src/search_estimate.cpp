// File: search_estimate.cpp
// AnalyticModel: closed-form compute, communication and memory costs used to order and prune
// candidate plans before the simulator ranks them.
#include "whale/plan/search_estimate.h"

#include "whale/plan/attention_memory.h"
#include "whale/plan/loss_memory.h"
#include "whale/plan/model_state_bytes.h"
#include "whale/plan/search_experts.h"

#include <algorithm>

namespace whale::plan {
namespace {

void push_prefix(std::vector<double>& v, double x) { v.push_back(v.back() + x); }

}  // namespace

AnalyticModel::RangeMax::RangeMax(std::vector<double> values) {
  levels.push_back(std::move(values));
  const size_t n = levels[0].size();
  for (size_t k = 1; (size_t{1} << k) <= n; ++k) {
    const std::vector<double>& prev = levels[k - 1];
    std::vector<double> level;
    for (size_t i = 0; i + (size_t{1} << k) <= n; ++i) level.push_back(std::max(prev[i], prev[i + (size_t{1} << (k - 1))]));
    levels.push_back(std::move(level));
  }
}

double AnalyticModel::RangeMax::of(int first, int end) const {
  if (end <= first) return 0.0;
  int k = 0;
  while ((2 << k) <= end - first) ++k;
  return std::max(levels[k][first], levels[k][end - (1 << k)]);
}

AnalyticModel::AnalyticModel(const Cluster& cluster, const Model& model,
                             SearchStrategies strategies)
    : cluster_(cluster),
      model_(model),
      strategies_(strategies),
      precision_(model.training.precision),
      element_bytes_(bytes_per_element(precision_)),
      gradient_bytes_(gradient_bytes_per_element(precision_, model.training.framework_precision)),
      optimizer_bytes_(state_bytes_per_param(precision_, model.training.optimizer,
                                            model.training.framework_precision)
                           .optimizer) {
  for (auto* v : {&params_split_, &params_replicated_, &tp_bytes_, &tp_ops_, &act_split_, &act_input_,
                  &params_expert_, &all_to_all_bytes_}) {
    v->assign(1, 0.0);
  }
  for (const Layer& l : model.layers) {
    push_prefix(params_split_, l.parameters - l.parameters_replicated);
    push_prefix(params_replicated_, l.parameters_replicated);
    push_prefix(tp_bytes_, l.tp_allreduce_bytes);
    push_prefix(tp_ops_, l.tp_allreduce_bytes > 0 ? 1.0 : 0.0);
    push_prefix(act_split_, l.activation_bytes_split);
    push_prefix(act_input_, l.input_bytes);
    push_prefix(params_expert_, l.expert_parameters);
    push_prefix(all_to_all_bytes_, l.all_to_all_bytes * l.expert_load_imbalance);
    // The routed experts' kept activations, per device 1/tp of the token copies (moe_layer.h,
    // at expert_tp 1): a tp-split figure.
    act_split_.back() += l.activation_bytes_expert * l.expert_load_imbalance;
    backward_buffers_split_ = std::max(backward_buffers_split_, l.backward_buffer_bytes_split);
    backward_buffers_replicated_ = std::max(backward_buffers_replicated_, l.backward_buffer_bytes_replicated);
    largest_input_ = std::max(largest_input_, l.input_bytes);
  }
  node_devices_ = 0;
  for (const Node& node : cluster.nodes) {
    const int n = static_cast<int>(node.device_ids.size());
    node_devices_ = node_devices_ == 0 ? n : std::min(node_devices_, n);
  }
  node_devices_ = std::max(1, node_devices_);
  expert_shards_ = ExpertShardTable(model, node_devices_);
  for (const Layer& l : model.layers) {
    gemm_attention_.emplace_back();
    for (const GemmOp& g : l.gemms) gemm_attention_.back().push_back(is_attention_core(g.name));
    memory_attention_.emplace_back();
    for (const MemoryOp& op : l.memory_ops) memory_attention_.back().push_back(is_attention_core(op.name));
  }
  weight_pass_.assign(kWeightPassLevels, std::vector<double>(1, 0.0));
  for (int k = 0; k < kWeightPassLevels; ++k) {
    for (const Layer& l : model.layers) push_prefix(weight_pass_[k], weight_pass_bytes(l, 1 << k, precision_));
  }
  const StateBytesPerParam state =
      state_bytes_per_param(precision_, model.training.optimizer, model.training.framework_precision);
  for (const auto& [name, profile] : cluster.profiles) {
    DeviceMemory& d = device_memory_[name];
    d.activation_scale = profile.calibration.activation_memory_scale;
    d.optimizer_bytes = held_optimizer_bytes_per_param(state, profile.framework_memory);
    d.unsharded_optimizer_bytes = unsharded_optimizer_bytes_per_param(state, profile.framework_memory);
    d.stage_buffer_cache = profile.framework_memory.stage_buffer_cache;
    d.gradient_bucket_copy = profile.framework_memory.gradient_bucket_copy;
    d.sharded_gradients_held_whole = profile.framework_memory.sharded_gradients_held_whole;
    d.act_attention.assign(1, 0.0);
    d.act_replicated.assign(1, 0.0);
    d.loss_transient.assign(1, 0.0);
    d.head_norm_backward.assign(1, 0.0);
    std::vector<double> whole, rebuilt_of, replicated_of;
    for (const Layer& l : model.layers) {
      const double attention = attention_kept_bytes(l, profile.framework_memory, precision_);
      const double replicated = replicated_kept_bytes(l, profile.framework_memory);
      push_prefix(d.act_attention, attention);
      push_prefix(d.act_replicated, replicated);
      push_prefix(d.loss_transient, loss_backward_transient_bytes(l, profile.framework_memory.cross_entropy));
      // At tp 1 without a block's cached buffers: the most the simulator counts.
      push_prefix(d.head_norm_backward, head_norm_backward_bytes(l, 1, false, false));
      whole.push_back(replicated + l.activation_bytes_split + attention);
      rebuilt_of.push_back(selective_rebuilt_bytes(l, attention));
      replicated_of.push_back(replicated);
    }
    d.act_max = RangeMax(std::move(whole));
    d.selective_rebuilt_max = RangeMax(std::move(rebuilt_of));
    d.replicated_max = RangeMax(std::move(replicated_of));
  }
}

const AnalyticModel::DeviceMemory& AnalyticModel::device_memory(const std::string& device_model) const {
  return device_memory_.at(device_model);
}

bool AnalyticModel::sequence_parallel(int tp) const {
  return strategies_.sequence_parallel && tp > 1 &&
         (model_.sequence <= 0 || model_.sequence % tp == 0);
}

const ComputeTable& AnalyticModel::table(const std::string& device_model, int tp, int share) {
  size_t index = 0;
  while (index < model_names_.size() && model_names_[index] != device_model) ++index;
  if (index == model_names_.size()) model_names_.push_back(device_model);
  const unsigned long long key = (static_cast<unsigned long long>(index) << 48) ^
                                 (static_cast<unsigned long long>(tp) << 32) ^ static_cast<unsigned>(share);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const DeviceProfile& prof = cluster_.profiles.at(device_model);
  // The device's effective GEMM precision, as the simulator prices it (framework_precision.h).
  const Precision gemm_precision =
      effective_gemm_precision(precision_, model_.training.framework_precision, prof);
  const double peak = prof.peak(gemm_precision);
  const EfficiencyCurve& gemm = prof.gemm_curve(gemm_precision);
  // Sequence parallelism runs every memory op on 1/tp of the tokens.
  const bool sp = sequence_parallel(tp);
  ComputeTable p;
  p.forward_s.assign(1, 0.0);
  p.selective_s.assign(1, 0.0);
  p.backward_s.assign(1, 0.0);
  for (size_t i = 0; i < model_.layers.size(); ++i) {
    const Layer& l = model_.layers[i];
    // Forward: every op once plus a launch; backward: GEMMs twice, memory ops once. Each GEMM
    // is one batched kernel whose efficiency is read at its total flops.
    double forward = 0, backward = 0, attention = 0;
    for (size_t o = 0; o < l.gemms.size(); ++o) {
      const GemmOp& g = l.gemms[o];
      // A routed expert's grouped GEMM: 1/tp of the expert flops on every device, at the
      // busiest device's load, each expert's product at the smallest shape (ep 1).
      const double load = g.expert ? l.expert_load_imbalance : 1.0;
      const double flops = 2.0 * g.m * g.n * g.k * g.count * share * load / (g.tp_split || g.expert ? tp : 1);
      if (flops <= 0) continue;
      const double curve_flops = g.expert ? flops / g.count : flops;
      const double s = flops / (peak * std::max(1e-3, gemm.at(curve_flops))) + prof.kernel_launch_s;
      forward += s;
      backward += 2.0 * s;
      if (gemm_attention_[i][o]) attention += s;
    }
    for (size_t o = 0; o < l.memory_ops.size(); ++o) {
      const MemoryOp& op = l.memory_ops[o];
      const double bytes = op.bytes * share * (op.expert ? l.expert_load_imbalance : 1.0) / (op.tp_split || sp ? tp : 1);
      const double eff = std::max(1e-3, prof.memory_efficiency.at(bytes));
      const double s = bytes / (prof.memory_bandwidth_bytes_per_s * eff) + prof.kernel_launch_s;
      forward += s;
      backward += s;
      if (memory_attention_[i][o]) attention += s;
    }
    push_prefix(p.forward_s, forward);
    push_prefix(p.backward_s, backward);
    push_prefix(p.selective_s, attention);
  }
  return cache_.emplace(key, std::move(p)).first->second;
}

Seconds AnalyticModel::forward_s(const std::string& device_model, int tp, int share, int first,
                                 int end) {
  return table(device_model, tp, share).forward(first, end);
}

Seconds AnalyticModel::backward_s(const std::string& device_model, int tp, int share, int first,
                                  int end) {
  return table(device_model, tp, share).backward(first, end);
}

Seconds AnalyticModel::recompute_s(const std::string& device_model, int tp, int share, int first,
                                   int end, Recompute r) {
  return table(device_model, tp, share).recompute(first, end, r);
}

Seconds AnalyticModel::tp_comm_s(const Link& link, int tp, int share, int first, int end) const {
  // MoE: the dispatch and combine all-to-alls of 1/tp of the tokens, the expert-parallel group
  // inside the node (search_experts.h), at the busiest receiver's bytes.
  const Seconds all_to_all_s = 2.0 * range(all_to_all_bytes_, first, end) * share / tp / link.bandwidth_bytes_per_s;
  if (tp <= 1) return all_to_all_s;
  const double ops = range(tp_ops_, first, end);
  const double bytes = range(tp_bytes_, first, end) * share;
  return 2.0 * (tp - 1) * link.latency_s * ops + 2.0 * (tp - 1) / tp * bytes / link.bandwidth_bytes_per_s + all_to_all_s;
}

double AnalyticModel::device_parameters(int first, int end, int tp, int dp, double* experts) const {
  const double expert = range(params_expert_, first, end);
  const double expert_per_device = expert > 0 ? expert / expert_shards_(tp, dp) : 0.0;
  if (experts) *experts = expert_per_device;
  return (range(params_split_, first, end) - expert) / tp + range(params_replicated_, first, end) + expert_per_device;
}

Seconds AnalyticModel::dp_comm_s(const DataParallelRing& ring, int tp, int dp, int first, int end) const {
  return dp > 1 ? ring.allreduce_s(device_parameters(first, end, tp, dp) * gradient_bytes_) : 0.0;
}

Seconds AnalyticModel::dp_gather_s(const DataParallelRing& ring, int tp, int dp, int first, int end) const {
  // The all-gather of the updated weights: half an all-reduce, of weight (not gradient) bytes.
  return dp > 1 ? 0.5 * ring.allreduce_s(device_parameters(first, end, tp, dp) * element_bytes_) : 0.0;
}

Bytes AnalyticModel::weight_pass_range(int first, int end, int tp) const {
  for (int k = 0; k < kWeightPassLevels; ++k) {
    if (tp == 1 << k) return range(weight_pass_[k], first, end);
  }
  double sum = 0;  // a degree that is not a power of two (a hint's)
  for (int l = first; l < end; ++l) sum += weight_pass_bytes(model_.layers[l], tp, precision_);
  return sum;
}

Bytes AnalyticModel::boundary_bytes(int end) const {
  return end <= 0 ? 0.0 : model_.layers[end - 1].output_bytes;
}

MemoryNeed AnalyticModel::memory(const std::string& device_model, int first, int end, int tp, int dp,
                                 int share, int in_flight, Recompute r, bool shard_optimizer,
                                 bool shard_gradients, int weight_passes) const {
  return memory(device_memory(device_model), first, end, tp, dp, share, in_flight, r, shard_optimizer,
                shard_gradients, weight_passes);
}

MemoryNeed AnalyticModel::memory(const DeviceMemory& device, int first, int end, int tp, int dp,
                                 int share, int in_flight, Recompute r, bool shard_optimizer,
                                 bool shard_gradients, int weight_passes) const {
  double experts = 0;
  const double params = device_parameters(first, end, tp, dp, &experts);
  const double elt = element_bytes_;
  const auto optimizer_at = [&](double shards) {
    return optimizer_bytes_per_param(device.optimizer_bytes, device.unsharded_optimizer_bytes,
                                     shard_optimizer ? shards : 1.0);
  };
  const double optimizer = optimizer_at(dp);
  // ZeRO-2 holds the replica's piece of the gradients, or all of them where the framework keeps
  // its buffer whole (framework_memory.sharded_gradients_held_whole).
  const bool gradient_pieces = shard_gradients && !device.sharded_gradients_held_whole;
  const double gradients = gradient_bytes_ / (gradient_pieces ? dp : 1);
  // The routed experts' state is sharded over expert dp = dp x tp / (ep x expert_tp).
  const double expert_dp = experts > 0 ? dp * tp / std::max(1, expert_shards_(tp, dp)) : dp;
  const double expert_state = experts * (optimizer_at(expert_dp) +
                                         (gradient_pieces ? gradient_bytes_ / expert_dp : gradient_bytes_));
  // Korthikanti et al. 2022, Table 2: sequence parallelism shards the replicated activations
  // (and the full-recomputation checkpoint) along the sequence too.
  const double sp = sequence_parallel(tp) ? tp : 1;
  MemoryNeed need;
  need.state_bytes = params * elt + (params - experts) * (gradients + optimizer) + expert_state +
                     bucket_copy_bytes(device, params, dp, shard_gradients);
  double per_sample = 0;
  switch (r) {
    case Recompute::none:
      per_sample = range(device.act_replicated, first, end) / sp +
                   (range(act_split_, first, end) + range(device.act_attention, first, end)) / tp;
      break;
    case Recompute::selective:
      per_sample = range(device.act_replicated, first, end) / sp + range(act_split_, first, end) / tp;
      // The attention core one layer's backward re-runs holds its kept s² bytes and its output
      // again, one layer at a time (the simulator's recompute_transient_bytes).
      per_sample += device.selective_rebuilt_max.of(first, end) / tp / std::max(1, in_flight);
      break;
    case Recompute::full: {
      per_sample = range(act_input_, first, end) / sp;
      // One layer rebuilt at a time, all its activations: the replicated part over sp, the
      // rest over tp (at or above the largest layer's where the layers differ).
      const double worst =
          device.act_max.of(first, end) / tp + device.replicated_max.of(first, end) * (1.0 / sp - 1.0 / tp);
      per_sample += worst / std::max(1, in_flight);
      break;
    }
  }
  need.activation_bytes = per_sample * share * in_flight;
  // The head's backward beyond what it keeps on the stage that holds it (as the simulator adds
  // it: head_backward_transient_bytes), the loss's buffers vocabulary-parallel across tp.
  // Gradients freed after each step (framework_memory.h) are still counted in state_bytes
  // here: the estimate stays at or above the simulator's.
  need.activation_bytes +=
      std::max(range(device.loss_transient, first, end) / tp, range(device.head_norm_backward, first, end)) * share;
  // One layer's backward buffers under stage_buffer_cache, the model's largest (the
  // simulator adds the range's largest).
  if (device.stage_buffer_cache)
    need.activation_bytes += (backward_buffers_split_ / tp + backward_buffers_replicated_ / sp +
                              (sp > 1 ? kSequenceParallelWholeBuffers * largest_input_ : 0.0)) *
                             share;
  if (weight_passes >= 0) {
    const double weight_pass = weight_pass_range(first, end, tp);
    need.activation_bytes += (weight_pass * weight_passes + std::max(0.0, weight_pass - per_sample)) * share;
  }
  // The simulator scales kept, weight-pass and transient activations alike.
  need.activation_bytes *= device.activation_scale;
  return need;
}

Bytes AnalyticModel::table_copy_bytes(const std::string& device_model, int tp, int dp,
                                      bool shard_optimizer, bool shard_gradients) const {
  if (!model_.tie_embeddings) return 0.0;
  const double params = static_cast<double>(model_.vocabulary) * model_.hidden / tp;
  const DeviceMemory& device = device_memory(device_model);
  const bool gradient_pieces = shard_gradients && !device.sharded_gradients_held_whole;
  return params * (element_bytes_ + gradient_bytes_ / (gradient_pieces ? dp : 1) +
                   optimizer_bytes_per_param(device.optimizer_bytes, device.unsharded_optimizer_bytes,
                                             shard_optimizer ? dp : 1)) +
         bucket_copy_bytes(device, params, dp, shard_gradients);
}

Bytes AnalyticModel::bucket_copy_bytes(const DeviceMemory& device, double params, int dp, bool shard_gradients) const {
  return device.gradient_bucket_copy && dp > 1 && !shard_gradients ? params * gradient_bytes_ : 0.0;
}

Seconds AnalyticModel::optimizer_s(const std::string& device_model, int first, int end, int tp,
                                   int dp, bool shard_optimizer) const {
  const double params = device_parameters(first, end, tp, dp);
  const double bytes = params * (element_bytes_ + gradient_bytes_ + 2.0 * optimizer_bytes_) /
                       (shard_optimizer ? dp : 1);
  return bytes / cluster_.profiles.at(device_model).memory_bandwidth_bytes_per_s;
}

Bytes AnalyticModel::usable_bytes(const std::string& device_model) const {
  // A calibrated profile's memory reserve (what the framework holds beyond the model) too.
  const DeviceProfile& profile = cluster_.profiles.at(device_model);
  return tensor_capacity_bytes(profile.framework_memory,
                               profile.memory_bytes - profile.calibration.memory_reserve_bytes);
}

}  // namespace whale::plan

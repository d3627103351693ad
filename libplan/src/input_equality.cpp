// File: input_equality.cpp
// operator== of the planner's inputs (input_equality.h): every field, in declaration order.
#include "whale/plan/input_equality.h"

#include <tuple>

namespace whale::plan {

bool operator==(const Link& a, const Link& b) {
  return std::tie(a.kind, a.bandwidth_bytes_per_s, a.latency_s) ==
         std::tie(b.kind, b.bandwidth_bytes_per_s, b.latency_s);
}

bool operator==(const Device& a, const Device& b) {
  return std::tie(a.id, a.node, a.local_index, a.model, a.price_per_hour_usd) ==
         std::tie(b.id, b.node, b.local_index, b.model, b.price_per_hour_usd);
}

bool operator==(const Node& a, const Node& b) {
  return std::tie(a.name, a.intra_link, a.network, a.device_ids) ==
         std::tie(b.name, b.intra_link, b.network, b.device_ids);
}

bool operator==(const EfficiencyPoint& a, const EfficiencyPoint& b) {
  return std::tie(a.size, a.efficiency) ==
         std::tie(b.size, b.efficiency);
}

bool operator==(const EfficiencyCurve& a, const EfficiencyCurve& b) { return a.points() == b.points(); }

bool operator==(const MeasuredLayerTime& a, const MeasuredLayerTime& b) {
  return std::tie(a.kind, a.tp, a.micro_batch, a.forward_s, a.backward_s) ==
         std::tie(b.kind, b.tp, b.micro_batch, b.forward_s, b.backward_s);
}

bool operator==(const LayerTimes& a, const LayerTimes& b) {
  return std::tie(a.source, a.measurements, a.optimizer_s_per_parameter) ==
         std::tie(b.source, b.measurements, b.optimizer_s_per_parameter);
}

bool operator==(const ProfileCalibration& a, const ProfileCalibration& b) {
  return std::tie(a.source, a.gemm_efficiency_scale, a.gemm_small_scale, a.gemm_medium_scale,
                  a.gemm_large_scale, a.memory_op_time_scale, a.kernel_overhead_s, a.layer_overhead_s,
                  a.step_overhead_s, a.micro_batch_overhead_s, a.memory_reserve_bytes,
                  a.activation_memory_scale, a.links) ==
         std::tie(b.source, b.gemm_efficiency_scale, b.gemm_small_scale, b.gemm_medium_scale,
                  b.gemm_large_scale, b.memory_op_time_scale, b.kernel_overhead_s, b.layer_overhead_s,
                  b.step_overhead_s, b.micro_batch_overhead_s, b.memory_reserve_bytes,
                  b.activation_memory_scale, b.links);
}

bool operator==(const DeviceProfile& a, const DeviceProfile& b) {
  return std::tie(a.name, a.kind, a.source, a.memory_bytes, a.memory_bandwidth_bytes_per_s,
                  a.peak_flops_per_s, a.gemm_efficiency, a.memory_efficiency, a.kernel_launch_s,
                  a.slowdown_factor, a.op_bandwidth_bytes_per_s, a.framework_memory, a.calibration,
                  a.layer_times) ==
         std::tie(b.name, b.kind, b.source, b.memory_bytes, b.memory_bandwidth_bytes_per_s,
                  b.peak_flops_per_s, b.gemm_efficiency, b.memory_efficiency, b.kernel_launch_s,
                  b.slowdown_factor, b.op_bandwidth_bytes_per_s, b.framework_memory, b.calibration,
                  b.layer_times);
}

bool operator==(const Cluster& a, const Cluster& b) {
  return std::tie(a.name, a.source_file, a.nodes, a.devices, a.profiles) ==
         std::tie(b.name, b.source_file, b.nodes, b.devices, b.profiles);
}

bool operator==(const GemmOp& a, const GemmOp& b) {
  return std::tie(a.name, a.m, a.count, a.tp_split, a.expert) ==
         std::tie(b.name, b.m, b.count, b.tp_split, b.expert);
}

bool operator==(const MemoryOp& a, const MemoryOp& b) {
  return std::tie(a.name, a.bytes, a.tp_split, a.expert) ==
         std::tie(b.name, b.bytes, b.tp_split, b.expert);
}

bool operator==(const Layer& a, const Layer& b) {
  return std::tie(a.name, a.kind, a.gemms, a.memory_ops, a.parameters, a.parameters_replicated,
                  a.activation_bytes_replicated, a.activation_bytes_split, a.activation_bytes_attention,
                  a.attention_score_elements, a.attention_rows, a.attention_dropout, a.logit_elements,
                  a.input_bytes, a.output_bytes, a.tp_allreduce_bytes, a.experts, a.expert_parameters,
                  a.activation_bytes_expert, a.all_to_all_bytes, a.expert_load_imbalance) ==
         std::tie(b.name, b.kind, b.gemms, b.memory_ops, b.parameters, b.parameters_replicated,
                  b.activation_bytes_replicated, b.activation_bytes_split, b.activation_bytes_attention,
                  b.attention_score_elements, b.attention_rows, b.attention_dropout, b.logit_elements,
                  b.input_bytes, b.output_bytes, b.tp_allreduce_bytes, b.experts, b.expert_parameters,
                  b.activation_bytes_expert, b.all_to_all_bytes, b.expert_load_imbalance);
}

bool operator==(const MoeSpec& a, const MoeSpec& b) {
  return std::tie(a.experts, a.top_k, a.shared_experts, a.expert_ffn_hidden, a.capacity_factor, a.router,
                  a.aux_loss_coeff, a.bias_update_rate, a.first_dense_layers, a.layer_interval,
                  a.load_imbalance) ==
         std::tie(b.experts, b.top_k, b.shared_experts, b.expert_ffn_hidden, b.capacity_factor, b.router,
                  b.aux_loss_coeff, b.bias_update_rate, b.first_dense_layers, b.layer_interval,
                  b.load_imbalance);
}

bool operator==(const Training& a, const Training& b) {
  return std::tie(a.global_batch, a.precision, a.optimizer, a.framework_precision) ==
         std::tie(b.global_batch, b.precision, b.optimizer, b.framework_precision);
}

bool operator==(const Model& a, const Model& b) {
  return std::tie(a.name, a.source_file, a.family, a.num_layers, a.hidden, a.heads, a.ffn_hidden,
                  a.kv_heads, a.tie_embeddings, a.qkv_bias, a.rope_theta, a.sequence, a.vocabulary,
                  a.attention_dropout, a.hidden_dropout, a.moe, a.training, a.layers) ==
         std::tie(b.name, b.source_file, b.family, b.num_layers, b.hidden, b.heads, b.ffn_hidden,
                  b.kv_heads, b.tie_embeddings, b.qkv_bias, b.rope_theta, b.sequence, b.vocabulary,
                  b.attention_dropout, b.hidden_dropout, b.moe, b.training, b.layers);
}

}  // namespace whale::plan

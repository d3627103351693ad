// File: input_equality.cpp
// operator== of the planner's inputs (input_equality.h): every field, in declaration order,
// each type's fields listed once.
#include "whale/plan/input_equality.h"

#include <tuple>

#include "aggregate_fields.h"

namespace whale::plan {
namespace {

// Whether `fields` (a std::tie of the members) of a and b are equal. Fails to compile when
// `fields` ties fewer or more members than T has, so that a field added to T and forgotten
// here cannot make StructureCache return a stale result: when it fires, add the new field to
// T's std::tie below (in declaration order), or, if equal inputs may differ in it, say why
// in a comment and change this check for T.
template <typename T, typename Fields>
bool same_fields(const T& a, const T& b, Fields fields) {
  static_assert(std::tuple_size_v<decltype(fields(a))> == detail::aggregate_field_count<T>(),
                "operator== must tie every field of its type: see same_fields in input_equality.cpp");
  return fields(a) == fields(b);
}

}  // namespace

bool operator==(const Link& a, const Link& b) {
  return same_fields(a, b, [](const Link& x) {
    return std::tie(x.kind, x.bandwidth_bytes_per_s, x.latency_s);
  });
}

bool operator==(const Device& a, const Device& b) {
  return same_fields(a, b, [](const Device& x) {
    return std::tie(x.id, x.node, x.local_index, x.model, x.price_per_hour_usd);
  });
}

bool operator==(const Node& a, const Node& b) {
  return same_fields(a, b, [](const Node& x) {
    return std::tie(x.name, x.intra_link, x.network, x.device_ids);
  });
}

bool operator==(const EfficiencyPoint& a, const EfficiencyPoint& b) {
  return same_fields(a, b, [](const EfficiencyPoint& x) {
    return std::tie(x.size, x.efficiency);
  });
}

bool operator==(const EfficiencyCurve& a, const EfficiencyCurve& b) { return a.points() == b.points(); }

bool operator==(const MeasuredLayerTime& a, const MeasuredLayerTime& b) {
  return same_fields(a, b, [](const MeasuredLayerTime& x) {
    return std::tie(x.kind, x.tp, x.micro_batch, x.forward_s, x.backward_s);
  });
}

bool operator==(const LayerTimes& a, const LayerTimes& b) {
  return same_fields(a, b, [](const LayerTimes& x) {
    return std::tie(x.source, x.measurements, x.optimizer_s_per_parameter);
  });
}

bool operator==(const ProfileCalibration& a, const ProfileCalibration& b) {
  return same_fields(a, b, [](const ProfileCalibration& x) {
    return std::tie(x.source, x.gemm_efficiency_scale, x.gemm_small_scale, x.gemm_medium_scale,
                    x.gemm_large_scale, x.memory_op_time_scale, x.kernel_overhead_s, x.layer_overhead_s,
                    x.step_overhead_s, x.micro_batch_overhead_s, x.memory_reserve_bytes,
                    x.activation_memory_scale, x.links);
  });
}

bool operator==(const CacheResidency& a, const CacheResidency& b) {
  return same_fields(a, b, [](const CacheResidency& x) {
    return std::tie(x.cache_bytes_per_device, x.warm_gemm_efficiency, x.warm_op_bandwidth_bytes_per_s,
                    x.warm_op_backward_bandwidth_bytes_per_s, x.warm_fraction_by_working_set);
  });
}

bool operator==(const FlashAttentionRate& a, const FlashAttentionRate& b) {
  return same_fields(a, b, [](const FlashAttentionRate& x) {
    return std::tie(x.head_size, x.forward_flops_per_s, x.backward_flops_per_s);
  });
}

bool operator==(const FlashAttentionRates& a, const FlashAttentionRates& b) {
  return same_fields(a, b, [](const FlashAttentionRates& x) { return std::tie(x.rates); });
}

bool operator==(const DeviceProfile& a, const DeviceProfile& b) {
  return same_fields(a, b, [](const DeviceProfile& x) {
    return std::tie(x.name, x.kind, x.source, x.memory_bytes, x.memory_bandwidth_bytes_per_s,
                    x.peak_flops_per_s, x.gemm_efficiency, x.memory_efficiency, x.kernel_launch_s,
                    x.slowdown_factor, x.op_bandwidth_bytes_per_s, x.op_backward_bandwidth_bytes_per_s,
                    x.framework_memory, x.calibration,
                    x.layer_times, x.cache, x.flash_attention);
  });
}

bool operator==(const Cluster& a, const Cluster& b) {
  return same_fields(a, b, [](const Cluster& x) {
    return std::tie(x.name, x.source_file, x.nodes, x.devices, x.profiles);
  });
}

bool operator==(const GemmOp& a, const GemmOp& b) {
  return same_fields(a, b, [](const GemmOp& x) {
    return std::tie(x.name, x.m, x.n, x.k, x.count, x.tp_split, x.expert);
  });
}

bool operator==(const MemoryOp& a, const MemoryOp& b) {
  return same_fields(a, b, [](const MemoryOp& x) {
    return std::tie(x.name, x.bytes, x.tp_split, x.expert);
  });
}

bool operator==(const Layer& a, const Layer& b) {
  return same_fields(a, b, [](const Layer& x) {
    return std::tie(x.name, x.kind, x.gemms, x.memory_ops, x.parameters, x.parameters_replicated,
                    x.activation_bytes_replicated, x.activation_bytes_split, x.activation_bytes_attention,
                    x.attention_score_elements, x.attention_rows, x.attention_dropout, x.attention_output_bytes,
                    x.dropout_mask_bytes,
                    x.logit_elements,
                    x.input_bytes, x.backward_buffer_bytes_split, x.backward_buffer_bytes_replicated,
                    x.output_bytes, x.tp_allreduce_bytes, x.experts, x.expert_parameters,
                    x.activation_bytes_expert, x.all_to_all_bytes, x.expert_load_imbalance);
  });
}

bool operator==(const MoeSpec& a, const MoeSpec& b) {
  return same_fields(a, b, [](const MoeSpec& x) {
    return std::tie(x.experts, x.top_k, x.shared_experts, x.expert_ffn_hidden, x.capacity_factor, x.router,
                    x.aux_loss_coeff, x.bias_update_rate, x.first_dense_layers, x.layer_interval,
                    x.load_imbalance);
  });
}

bool operator==(const Training& a, const Training& b) {
  return same_fields(a, b, [](const Training& x) {
    return std::tie(x.global_batch, x.global_batch_tokens, x.precision, x.optimizer, x.framework_precision);
  });
}

bool operator==(const Model& a, const Model& b) {
  return same_fields(a, b, [](const Model& x) {
    return std::tie(x.name, x.source_file, x.family, x.num_layers, x.hidden, x.heads, x.head_dim,
                    x.ffn_hidden, x.kv_heads, x.tie_embeddings, x.qkv_bias, x.rope_theta, x.sequence, x.sliding_window, x.vocabulary,
                    x.attention_dropout, x.hidden_dropout, x.moe, x.training, x.layers);
  });
}

}  // namespace whale::plan

// File: model_moe.cpp
// The mixture-of-experts MLP of a block (docs/moe.md): router, routed experts as grouped GEMMs
// at their real shapes, shared experts, token permutation, and the all-to-all volume. Per
// sample (s tokens), forward, tp 1, as the other family builders.
#include "model_families.h"

#include <algorithm>

namespace whale::plan {

void add_moe_mlp(Layer& layer, const TransformerDims& d, bool swiglu) {
  const MoeSpec& moe = *d.moe;
  const double s = d.s, h = d.h, b = d.b;
  const double experts = moe.experts, k = moe.top_k, f = moe.expert_ffn_hidden;
  const double shared = moe.shared_experts;
  const double rows = s * k / experts;  // mean tokens per expert
  // Router: a bias-free h x experts linear, replicated on every device; its fp32 logits go
  // through the softmax (or sigmoid) and the top-k choice.
  layer.gemms.push_back(GemmOp{"moe_router", s, experts, h, 1, false, false});
  layer.memory_ops.push_back(MemoryOp{"moe_router_topk", 2 * s * experts * 4, false, false});
  // Permutation: each token's hidden copied to its top_k experts' rows, and back, weighted by
  // the gates and summed (read k copies and the gates, write one).
  layer.memory_ops.push_back(MemoryOp{"moe_permute", 2 * s * k * h * b, true, false});
  layer.memory_ops.push_back(MemoryOp{"moe_unpermute", (s * k * h + s * k + s * h) * b, true, false});
  // Routed experts: the family's MLP at width f over rows tokens each.
  const int matrices = swiglu ? 3 : 2;
  if (swiglu) {
    layer.gemms.push_back(GemmOp{"expert_gate", rows, f, h, experts, false, true});
    layer.gemms.push_back(GemmOp{"expert_up", rows, f, h, experts, false, true});
    layer.gemms.push_back(GemmOp{"expert_down", rows, h, f, experts, false, true});
    layer.memory_ops.push_back(MemoryOp{"expert_swiglu", 3 * s * k * f * b, true, true});
  } else {
    layer.gemms.push_back(GemmOp{"expert_fc1", rows, f, h, experts, false, true});
    layer.gemms.push_back(GemmOp{"expert_fc2", rows, h, f, experts, false, true});
    layer.memory_ops.push_back(MemoryOp{"expert_gelu", 2 * s * k * f * b, true, true});
  }
  const double biases = swiglu ? 0 : f + h;  // the GELU MLP's fc1 and fc2 biases
  const double expert_parameters = experts * (matrices * h * f + biases);
  // Shared experts: the same MLP over every token, ungated, tensor-parallel as a dense MLP.
  double shared_parameters = 0;
  if (shared > 0) {
    const double width = shared * f;
    if (swiglu) {
      layer.gemms.push_back(GemmOp{"shared_gate", s, width, h, 1, true, false});
      layer.gemms.push_back(GemmOp{"shared_up", s, width, h, 1, true, false});
      layer.gemms.push_back(GemmOp{"shared_down", s, h, width, 1, true, false});
      layer.memory_ops.push_back(MemoryOp{"shared_swiglu", 3 * s * width * b, true, false});
      layer.activation_bytes_split += 3 * s * width * b;  // gate and up outputs, down input
    } else {
      layer.gemms.push_back(GemmOp{"shared_fc1", s, width, h, 1, true, false});
      layer.gemms.push_back(GemmOp{"shared_fc2", s, h, width, 1, true, false});
      layer.memory_ops.push_back(MemoryOp{"shared_gelu", 2 * s * width * b, true, false});
      layer.activation_bytes_split += 2 * s * width * b;  // GELU input and fc2 input
    }
    shared_parameters = shared * (matrices * h * f + biases);
    if (!swiglu) layer.parameters_replicated += shared * h;  // row-parallel fc2 biases
  }
  layer.parameters += h * experts + expert_parameters + shared_parameters;
  layer.parameters_replicated += h * experts;  // the router
  layer.expert_parameters = expert_parameters;
  layer.experts = experts;
  // A capacity caps the busiest expert's tokens at capacity_factor x the mean; the rest drop.
  layer.expert_load_imbalance =
      moe.capacity_factor > 0 ? std::min(moe.load_imbalance, std::max(1.0, moe.capacity_factor)) : moe.load_imbalance;
  // Kept for the backward: the router's fp32 probabilities (replicated), and per routed token
  // copy its input row and the expert's hidden activations (GELU input and fc2 input; gate,
  // up and the down input under SwiGLU), plus the gates.
  layer.activation_bytes_replicated += s * experts * 4 + s * k * 4;
  layer.activation_bytes_expert = s * k * (h + (swiglu ? 3 : 2) * f) * b;
  layer.all_to_all_bytes = s * h * k * b;
}

}  // namespace whale::plan

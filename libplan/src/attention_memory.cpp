// File: attention_memory.cpp
// attention_kept_bytes: the attention core's saved tensors by implementation; replicated_kept_bytes:
// the hidden-dropout masks kept or not (attention_memory.h).
#include "whale/plan/attention_memory.h"

namespace whale::plan {

// What autograd saves, op by op (the score GEMM keeps Q and K and the context GEMM V: those are
// in the layer's split activations, as the output that the projection keeps):
// - softmax keeps its output for its backward (PyTorch's softmax backward reads the output);
// - dropout keeps a bool mask, 1 byte per element (PyTorch's native_dropout; Korthikanti et
//   al. 2022, Section 4.1, "a mask of size as²b");
// - the context GEMM keeps its left operand, the probabilities after dropout.
// eager's fp32 softmax: Hugging Face transformers' eager_attention_forward calls
// softmax(..., dtype=torch.float32).to(query.dtype), and Megatron-LM's FusedScaleMaskSoftmax
// .forward_torch_softmax upcasts the same way under attention_softmax_in_fp32 (implied by
// apply_query_key_layer_scaling). FlashAttention (Dao et al. 2022, Algorithm 2) saves the
// output and the row statistics L = m + log(l), one fp32 per row, and regenerates the dropout
// mask from the Philox seed in its backward.
namespace {

Bytes kept_bytes(const Layer& layer, AttentionImplementation attention, Precision precision, bool dropout) {
  const double n = layer.attention_score_elements;
  if (n <= 0) return attention == AttentionImplementation::flash ? 0.0 : layer.activation_bytes_attention;
  const double e = bytes_per_element(precision);
  switch (attention) {
    case AttentionImplementation::flash: return 4.0 * layer.attention_rows;
    case AttentionImplementation::fused_softmax:
      if (e < 4) return dropout ? (2 * e + 1) * n : e * n;
      [[fallthrough]];  // no fused kernel for fp32 inputs: the eager path runs
    case AttentionImplementation::eager:
      if (dropout) return (4 + 1 + e) * n;
      return (e < 4 ? 4 + e : 4.0) * n;
  }
  return 0;
}

}  // namespace

Bytes attention_kept_bytes(const Layer& layer, AttentionImplementation attention, Precision precision) {
  return kept_bytes(layer, attention, precision, layer.attention_dropout);
}

Bytes attention_kept_bytes(const Layer& layer, const FrameworkMemory& framework, Precision precision) {
  return kept_bytes(layer, framework.attention, precision, layer.attention_dropout && framework.dropout_masks_kept);
}

Bytes selective_rebuilt_bytes(const Layer& layer, Bytes attention_kept) {
  return attention_kept > 0 ? attention_kept + layer.attention_output_bytes : 0.0;
}

Bytes replicated_kept_bytes(const Layer& layer, const FrameworkMemory& framework) {
  return layer.activation_bytes_replicated - (framework.dropout_masks_kept ? 0.0 : layer.dropout_mask_bytes);
}

}  // namespace whale::plan

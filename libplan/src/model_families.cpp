// File: model_families.cpp
// The layers of gpt, bert and llama models. Per sample (s tokens), forward, tp 1; b is bytes per
// element. Activation bytes follow Korthikanti et al. 2022 (Megatron-LM, "Reducing activation
// recomputation"), whose figures are at 2 bytes per element; they are scaled by b/2 here, except
// the dropout masks, which are 1 byte per element at any precision.
#include "model_families.h"

#include "whale/plan/attention_memory.h"

namespace whale::plan {
namespace {

void gemm(Layer& layer, const std::string& name, double m, double n, double k, double count = 1,
          bool tp_split = true) {
  layer.gemms.push_back(GemmOp{name, m, n, k, count, tp_split});
}

void memory_op(Layer& layer, const std::string& name, Bytes bytes, bool tp_split = false) {
  layer.memory_ops.push_back(MemoryOp{name, bytes, tp_split});
}

// Read + write of an elementwise op over n elements, plus a 1-byte mask when it is a dropout.
Bytes elementwise_bytes(double n, double b) { return 2 * n * b; }
Bytes dropout_bytes(double n, double b) { return 2 * n * b + n; }

}  // namespace

TransformerDims transformer_dims(const Model& model, Precision precision) {
  TransformerDims d;
  d.s = model.sequence;
  d.h = model.hidden;
  d.a = model.heads;
  d.f = model.ffn_hidden > 0 ? model.ffn_hidden : 4.0 * model.hidden;
  const double kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  // head_dim defaults to hidden / heads, which heads divides: d.q is then h exactly and every
  // figure is as it was before head_dim existed.
  d.head_dim = model.attention_head_dim();
  d.q = d.a * d.head_dim;
  d.kv = kv_heads * d.head_dim;
  d.v = model.vocabulary;
  d.b = bytes_per_element(precision);
  d.precision = precision;
  d.attention_dropout = attention_dropout_of(model) > 0;
  d.hidden_dropout = hidden_dropout_of(model) > 0;
  d.tied = model.tie_embeddings;
  d.qkv_bias = model.qkv_bias;
  d.learned_positions = model.family != "llama" && model.rope_theta <= 0;
  d.moe = model.moe;
  return d;
}

Layer embedding_layer(const std::string& family, const TransformerDims& d) {
  const double s = d.s, h = d.h, b = d.b;
  Layer layer;
  layer.name = "embedding";
  layer.kind = LayerKind::embedding;
  // The token table is vocabulary-parallel across tp (Megatron); its output is all-reduced.
  layer.parameters = d.v * h;
  layer.input_bytes = 4 * s;  // int32 token ids
  layer.output_bytes = s * h * b;
  layer.tp_allreduce_bytes = s * h * b;
  if (family == "llama") {
    memory_op(layer, "embedding_gather", elementwise_bytes(s * h, b));
    return layer;
  }
  // gpt and bert: learned positions (replicated), summed into the token rows, then dropout.
  // Under rotary positions (GPT-NeoX) there is no table and nothing to sum.
  if (d.learned_positions) {
    layer.parameters += s * h;
    layer.parameters_replicated = s * h;
    memory_op(layer, "embedding_gather", 3 * s * h * b);
  } else {
    memory_op(layer, "embedding_gather", elementwise_bytes(s * h, b));
  }
  if (d.hidden_dropout) {
    memory_op(layer, "embedding_dropout", dropout_bytes(s * h, b));
    layer.activation_bytes_replicated = s * h;  // the dropout mask, 1 byte per element
    layer.dropout_mask_bytes = s * h;
  }
  if (family == "bert") {
    // Token-type table (2 types) and the embedding layernorm, both replicated.
    layer.parameters += 2 * h + 2 * h;
    layer.parameters_replicated += 2 * h + 2 * h;
    memory_op(layer, "embedding_layernorm", elementwise_bytes(s * h, b));
    layer.activation_bytes_replicated += s * h * b;
  }
  return layer;
}

Layer gpt_block(const TransformerDims& d, int index) {
  const double s = d.s, h = d.h, a = d.a, q = d.q, f = d.f, b = d.b;
  Layer layer;
  layer.name = "block" + std::to_string(index);
  layer.kind = LayerKind::transformer;
  // q, k and v are each `a` heads of width d.head_dim (q = a * d.head_dim, h by default); the
  // projection maps the context (width q) back to h.
  gemm(layer, "attention_qkv", s, 3 * q, h);
  gemm(layer, "attention_scores", s, s, d.head_dim, a);
  gemm(layer, "attention_context", s, d.head_dim, s, a);
  gemm(layer, "attention_proj", s, h, q);
  const bool moe = d.moe && d.moe->is_moe_block(index);
  if (!moe) {
    gemm(layer, "mlp_fc1", s, f, h);
    gemm(layer, "mlp_fc2", s, h, f);
  }
  memory_op(layer, "layernorm1", elementwise_bytes(s * h, b));
  memory_op(layer, "attention_softmax", elementwise_bytes(a * s * s, b), true);
  if (d.attention_dropout) memory_op(layer, "attention_dropout", dropout_bytes(a * s * s, b), true);
  if (d.hidden_dropout) memory_op(layer, "attention_proj_dropout", dropout_bytes(s * h, b));
  memory_op(layer, "residual1", 3 * s * h * b);
  memory_op(layer, "layernorm2", elementwise_bytes(s * h, b));
  if (!moe) memory_op(layer, "mlp_gelu", elementwise_bytes(s * f, b), true);
  if (d.hidden_dropout) memory_op(layer, "mlp_dropout", dropout_bytes(s * h, b));
  memory_op(layer, "residual2", 3 * s * h * b);
  // Weights 3qh (qkv) + qh (proj) + 2hf; biases 3q (qkv) + h (proj) + f (fc1) + h (fc2); two
  // layernorms 4h (q = h by default: 4h^2 + 2hf). An MoE block's MLP (fc1, fc2 and their
  // biases) is add_moe_mlp's.
  layer.parameters = 4 * q * h + 3 * q + h + 4 * h + (moe ? 0 : 2 * h * f + f + h);
  // Every tp shard holds the layernorms and the biases of the row-parallel proj and fc2.
  layer.parameters_replicated = 4 * h + h + (moe ? 0 : h);
  // Korthikanti: 10sh replicated (norm inputs 4sh, qkv and fc1 inputs 4sh, two dropout masks
  // 2sh, 1 byte each, none without hidden dropout); split 24sh = q,k 4sh + v 2sh + proj input
  // 2sh + fc2 input 2sf + gelu input 2sf, written 8sh + 4sf for any ffn width, and 8sq + 4sf
  // for an attention width q other than h (those four terms are q, k, v and the context, each
  // of width q; the norm and dropout terms stay at h); attention 5as^2
  // (softmax output, dropout mask and output) under Megatron-LM's fused softmax, the figure
  // that a listed copy of the layer and the planner's quick estimate carry; the memory model
  // prices the profile's implementation from the shape (attention_memory.h).
  const double scale = b / 2;
  layer.dropout_mask_bytes = d.hidden_dropout ? 2 * s * h : 0.0;
  layer.activation_bytes_replicated = 8 * s * h * scale + layer.dropout_mask_bytes;
  layer.activation_bytes_split = (8 * s * q + (moe ? 0 : 4 * s * f)) * scale;
  layer.attention_score_elements = a * s * s;
  layer.attention_rows = a * s;
  layer.attention_dropout = d.attention_dropout;
  layer.attention_output_bytes = s * q * b;
  layer.activation_bytes_attention =
      attention_kept_bytes(layer, AttentionImplementation::fused_softmax, d.precision);
  // A backward's gradient buffers (whale-run's gpt Block::backward): the GELU's output and
  // input 2sf, the context sq and q, k, v 3sq (split); both layernorms' outputs, the residual
  // stream between the halves, and the block's input and output gradients 5sh (replicated). An
  // MoE block's MLP keeps its own (moe_layer.h), left out here.
  layer.backward_buffer_bytes_split = s * ((moe ? 0 : 2 * f) + 4 * q) * b;
  layer.backward_buffer_bytes_replicated = 5 * s * h * b;
  layer.input_bytes = s * h * b;
  layer.output_bytes = s * h * b;
  layer.tp_allreduce_bytes = 2 * s * h * b;  // after attention_proj and after mlp_fc2
  if (moe) add_moe_mlp(layer, d, false);
  return layer;
}

Layer llama_block(const TransformerDims& d, int index) {
  const double s = d.s, h = d.h, a = d.a, q = d.q, f = d.f, kv = d.kv, b = d.b;
  Layer layer;
  layer.name = "block" + std::to_string(index);
  layer.kind = LayerKind::transformer;
  // Q is `a` heads of width d.head_dim (q = a * d.head_dim, h by default), K and V kv_heads
  // heads each; the output projection maps the context (width q) back to h.
  gemm(layer, "attention_qkv", s, q + 2 * kv, h);
  gemm(layer, "attention_scores", s, s, d.head_dim, a);
  gemm(layer, "attention_context", s, d.head_dim, s, a);
  gemm(layer, "attention_out", s, h, q);
  const bool moe = d.moe && d.moe->is_moe_block(index);
  if (!moe) {
    gemm(layer, "mlp_gate", s, f, h);
    gemm(layer, "mlp_up", s, f, h);
    gemm(layer, "mlp_down", s, h, f);
  }
  memory_op(layer, "rmsnorm1", elementwise_bytes(s * h, b));
  memory_op(layer, "rotary", elementwise_bytes(s * (q + kv), b), true);
  memory_op(layer, "attention_softmax", elementwise_bytes(a * s * s, b), true);
  if (d.attention_dropout) memory_op(layer, "attention_dropout", dropout_bytes(a * s * s, b), true);
  memory_op(layer, "residual1", 3 * s * h * b);
  memory_op(layer, "rmsnorm2", elementwise_bytes(s * h, b));
  if (!moe) memory_op(layer, "mlp_swiglu", 3 * s * f * b, true);  // reads gate and up, writes one
  memory_op(layer, "residual2", 3 * s * h * b);
  // No biases: q,k,v h(q + 2kv), out qh, gate/up/down 3hf, two RMSNorm weights 2h (q = h by
  // default: h(h + 2kv) + h^2).
  layer.parameters = h * (q + 2 * kv) + q * h + (moe ? 0 : 3 * h * f) + 2 * h;
  if (d.qkv_bias) layer.parameters += q + 2 * kv;  // column-parallel: split across tp
  layer.parameters_replicated = 2 * h;
  // As gpt without dropout masks: norm inputs 2sh, qkv and gate/up inputs 2sh (replicated);
  // q,k,v s(q + 2kv), out input sq, gate and up outputs 2sf, down input sf (split); softmax as^2
  // (plus the mask and the dropped-out probabilities under an attention dropout).
  layer.activation_bytes_replicated = 4 * s * h * b;
  layer.activation_bytes_split = s * (2 * q + 2 * kv + (moe ? 0 : 3 * f)) * b;
  layer.attention_score_elements = a * s * s;
  layer.attention_rows = a * s;
  layer.attention_dropout = d.attention_dropout;
  layer.attention_output_bytes = s * q * b;
  layer.activation_bytes_attention =
      attention_kept_bytes(layer, AttentionImplementation::fused_softmax, d.precision);
  // A backward's gradient buffers (whale-run's llama Block::backward): SwiGLU's output, gate and
  // up 3sf, the context sq and q, k, v s(q + 2kv) (split); both norms' outputs, the residual
  // stream between the halves, and the block's input and output gradients 5sh (replicated).
  layer.backward_buffer_bytes_split = s * ((moe ? 0 : 3 * f) + 2 * q + 2 * kv) * b;
  layer.backward_buffer_bytes_replicated = 5 * s * h * b;
  layer.input_bytes = s * h * b;
  layer.output_bytes = s * h * b;
  layer.tp_allreduce_bytes = 2 * s * h * b;
  if (moe) add_moe_mlp(layer, d, true);
  return layer;
}

Layer head_layer(const std::string& family, const TransformerDims& d) {
  const double s = d.s, h = d.h, v = d.v, b = d.b;
  Layer layer;
  layer.name = "head";
  layer.kind = LayerKind::head;
  if (family == "bert") {
    // MLM head: dense h x h + GELU + layernorm (replicated), then the vocabulary decoder.
    gemm(layer, "mlm_dense", s, h, h, 1, false);
    memory_op(layer, "mlm_gelu", elementwise_bytes(s * h, b));
    memory_op(layer, "mlm_layernorm", elementwise_bytes(s * h, b));
    layer.parameters = h * h + h + 2 * h;
    layer.parameters_replicated = h * h + h + 2 * h;
    layer.parameters += v;  // decoder bias, vocabulary-parallel
    layer.activation_bytes_replicated = 4 * s * h * b;  // dense, GELU, norm and decoder inputs
  } else {
    const bool rms = family == "llama";
    memory_op(layer, rms ? "final_rmsnorm" : "final_layernorm", elementwise_bytes(s * h, b));
    layer.parameters = rms ? h : 2 * h;
    layer.parameters_replicated = layer.parameters;
    layer.activation_bytes_replicated = 2 * s * h * b;  // norm and LM head inputs
  }
  // The vocabulary projection, vocabulary-parallel across tp, and its cross-entropy, which
  // keeps the fp32 softmax of the logits for the backward pass. Tied, its weight is the token
  // table's and is counted there only (a pipeline's last stage holding a copy is not counted).
  gemm(layer, family == "bert" ? "mlm_decoder" : "lm_head", s, v, h);
  memory_op(layer, "cross_entropy", elementwise_bytes(s * v, b), true);
  if (!d.tied) layer.parameters += v * h;
  layer.activation_bytes_split = 4 * s * v;
  layer.logit_elements = s * v;
  layer.input_bytes = s * h * b;
  layer.output_bytes = 4;  // the fp32 loss of the sample
  // The backward all-reduces the gradient of the head input across tp; the forward's
  // cross-entropy statistics are smaller and are counted as the same volume.
  layer.tp_allreduce_bytes = s * h * b;
  return layer;
}

}  // namespace whale::plan

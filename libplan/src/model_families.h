// File: model_families.h
// Builders of the layers of the transformer families (gpt, bert, llama). Every figure is per
// sample, forward, at tp 1, following Megatron-LM (Narayanan 2021, Korthikanti 2022).
// Private to libplan.
#pragma once

#include <optional>
#include <string>

#include "whale/plan/model.h"

namespace whale::plan {

/// Hyperparameters as doubles, plus the bytes per element of the precision.
struct TransformerDims {
  double s = 0;      // sequence (tokens per sample)
  double h = 0;      // hidden
  double a = 0;      // attention heads
  double head_dim = 0;  // width of one attention head (Model::head_dim; h / a by default)
  double q = 0;      // attention width of Q (and of the context): a * d (= h by default)
  double f = 0;      // ffn hidden
  double kv = 0;     // width of K (= of V): kv_heads * d
  double v = 0;      // vocabulary
  double b = 0;      // bytes per element
  Precision precision = Precision::bf16;  // whose element b is
  bool attention_dropout = true;  // dropout on the attention probabilities (Model::attention_dropout > 0)
  bool hidden_dropout = true;     // dropout on the hidden states (Model::hidden_dropout > 0)
  bool tied = false;         // LM head shares the token table
  bool qkv_bias = false;     // llama: biases on q, k, v
  bool learned_positions = true;  // gpt/bert: a learned position table (false under rotary)
  std::optional<MoeSpec> moe;     // the model's experts; blocks it names get an MoE MLP
};

TransformerDims transformer_dims(const Model& model, Precision precision);

/// gpt: token + position embeddings (none under rotary); bert adds token types and a layernorm; llama: tokens only.
Layer embedding_layer(const std::string& family, const TransformerDims& d);
/// A pre-layernorm GPT (or BERT) block: attention and a GELU MLP, with biases and dropouts.
Layer gpt_block(const TransformerDims& d, int index);
/// A llama block: RMSNorm, grouped-query attention with rotary embeddings, SwiGLU, no biases.
Layer llama_block(const TransformerDims& d, int index);
/// Adds the mixture-of-experts MLP of block `layer` (d.moe set): router, routed experts (GELU
/// MLPs, or SwiGLU when `swiglu`), shared experts, their parameters, activations and
/// all-to-all bytes (model_moe.cpp). The block's dense MLP is left out by its caller.
void add_moe_mlp(Layer& layer, const TransformerDims& d, bool swiglu);
/// gpt/llama: final norm + LM head (tied or not) + cross-entropy; bert: the MLM head.
Layer head_layer(const std::string& family, const TransformerDims& d);

}  // namespace whale::plan

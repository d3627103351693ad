// File: llama_parameters.h
// Private: a Llama-family model's dimensions and the parameters of each layer (name, full
// shape, tensor-parallel split, initialisation), in the GPT's ParameterSpec terms.
#pragma once

#include <string>
#include <vector>

#include "model/gpt_parameters.h"
#include "whale/plan/model.h"

namespace whale::exec::llama {

using gpt::Init;
using gpt::ParameterSpec;
using gpt::Split;

/// Hyperparameters of a llama-family model, validated by llama_dims (throws whale::Error).
struct Dims {
  int layers = 0;    // blocks L
  int channels = 0;  // C
  int heads = 0;     // NH query heads
  int kv_heads = 0;  // KV key/value heads (KV divides NH)
  int ffn = 0;       // F, the SwiGLU width
  int sequence = 0;  // T
  int vocabulary = 0;
  bool qkv_bias = false;
  bool tie_embeddings = false;  // the LM head is the token table
  double rope_theta = 10000.0;
  std::optional<plan::MoeSpec> moe;  // the model's experts (moe_layer.h); unset when dense
  int head_size() const { return channels / heads; }
  /// Rows of the fused [Q | K | V] weight: (NH + 2 KV) HS.
  int qkv_rows() const { return (heads + 2 * kv_heads) * head_size(); }
};
Dims llama_dims(const plan::Model& model);

/// The parameters of model layer `layer` (0 = embedding, 1..L = blocks, L+1 = head), in
/// StageModule::parameters() order. Block b = layer-1 is named "layers.b."; with tied
/// embeddings the head's weight is the token table, listed under layer 0's name again.
std::vector<ParameterSpec> layer_parameters(const Dims& dims, int layer);

/// The layout of Llama parameter `name` on tp rank `tp_rank` of `tp_size`.
TensorShard llama_parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                                  int tp_size);

}  // namespace whale::exec::llama

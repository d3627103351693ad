// File: llama_parameters.cpp
// The Llama parameter list per layer and the validation of the family hyperparameters.
#include "model/llama_parameters.h"

#include <cmath>
#include <stdexcept>

#include "model/moe_parameters.h"
#include "whale/plan/error.h"

namespace whale::exec::llama {
Dims llama_dims(const plan::Model& model) {
  if (model.family != "llama")
    throw Error(model.source_file, "family", "a llama-family model, got '" + model.family + "'");
  gpt::require_transformer_dims(model);
  if (model.ffn_hidden <= 0)
    throw Error(model.source_file, "ffn_hidden",
                "a positive integer, got " + std::to_string(model.ffn_hidden));
  Dims d;
  d.layers = model.num_layers;
  d.channels = model.hidden;
  d.heads = model.heads;
  d.kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  d.ffn = model.ffn_hidden;
  d.sequence = model.sequence;
  d.vocabulary = model.vocabulary;
  d.qkv_bias = model.qkv_bias;
  d.tie_embeddings = model.tie_embeddings;
  if (model.rope_theta > 0) d.rope_theta = model.rope_theta;
  validate_moe(model);
  d.moe = model.moe;
  if (d.head_size() % 2 != 0)
    throw Error(model.source_file, "heads",
                "an even head size hidden / heads for rotary embeddings, got " +
                    std::to_string(d.head_size()));
  if (d.heads % d.kv_heads != 0)
    throw Error(model.source_file, "kv_heads",
                "a divisor of heads " + std::to_string(d.heads) + ", got " +
                    std::to_string(d.kv_heads));
  return d;
}

std::vector<ParameterSpec> layer_parameters(const Dims& d, int layer) {
  const std::size_t C = d.channels, F = d.ffn, V = d.vocabulary;
  const std::size_t Q = static_cast<std::size_t>(d.heads) * d.head_size();
  const std::size_t KV = static_cast<std::size_t>(d.kv_heads) * d.head_size();
  const double stddev = 0.02;
  const double residual_stddev = stddev / std::sqrt(2.0 * d.layers);
  const auto norm = [&](const std::string& name) {
    return ParameterSpec{name, C, 1, Split::none, Init::ones, 0.0, {}};
  };
  std::vector<ParameterSpec> specs;
  const ParameterSpec token_table{"embedding.wte", V, C, Split::vocabulary_rows, Init::normal, stddev, {}};
  if (layer == 0) {
    specs.push_back(token_table);
  } else if (layer <= d.layers) {
    const std::string p = "layers." + std::to_string(layer - 1) + ".";
    specs.push_back(norm(p + "attn_norm.weight"));
    specs.push_back({p + "attn.qkv.weight", Q + 2 * KV, C, Split::part_rows, Init::normal,
                     stddev, {Q, KV, KV}});
    if (d.qkv_bias)
      specs.push_back({p + "attn.qkv.bias", Q + 2 * KV, 1, Split::part_rows, Init::zeros, 0.0,
                       {Q, KV, KV}});
    specs.push_back({p + "attn.proj.weight", C, Q, Split::cols, Init::normal, residual_stddev, {}});
    specs.push_back(norm(p + "mlp_norm.weight"));
    if (d.moe && d.moe->is_moe_block(layer - 1)) {
      for (auto& s : moe_parameters(p, *d.moe, ExpertKind::swiglu, C, stddev, residual_stddev))
        specs.push_back(s);
      return specs;
    }
    specs.push_back({p + "mlp.gate.weight", F, C, Split::rows, Init::normal, stddev, {}});
    specs.push_back({p + "mlp.up.weight", F, C, Split::rows, Init::normal, stddev, {}});
    specs.push_back({p + "mlp.down.weight", C, F, Split::cols, Init::normal, residual_stddev, {}});
  } else if (layer == d.layers + 1) {
    specs.push_back(norm("head.norm.weight"));
    if (d.tie_embeddings)
      specs.push_back(token_table);  // held once by a stage that holds layer 0 too
    else
      specs.push_back({"head.weight", V, C, Split::vocabulary_rows, Init::normal, stddev, {}});
  } else {
    throw std::invalid_argument("llama layer " + std::to_string(layer) + " outside 0.." +
                                std::to_string(d.layers + 1));
  }
  return specs;
}

TensorShard llama_parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                                  int tp_size) {
  return gpt::find_shard_layout(llama_dims(model), layer_parameters, name, tp_rank, tp_size,
                                "Llama");
}

}  // namespace whale::exec::llama

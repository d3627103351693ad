// File: model_hf.cpp
// Reads a Hugging Face transformers config.json (JSON is YAML 1.2 flow syntax, so yaml-cpp
// parses it) into a family model: GPT-2, GPT-NeoX and the Llama/Mistral/Qwen2 dense decoders.
// Fields that change the compute in ways whale does not model (mixture of experts, sliding
// windows shorter than the sequence, MLP biases, a head_dim other than hidden/heads) fail
// naming the field. Schema and mapping: docs/model.md.
#include <algorithm>
#include <cmath>

#include "spec_yaml.h"
#include "whale/plan/error.h"

namespace whale::plan {
namespace {

// Tokens per global batch when the config gives none: Llama 2's 4M-token batch (Touvron et al.
// 2023, section 2.2); --global-batch overrides it.
constexpr double kDefaultBatchTokens = 4194304;

bool is_null(const YamlField& root, const std::string& key) {
  return !root.has(key) || root.get(key).node().IsNull();
}

// Fails on the first key that configures a mixture of experts with a non-null, non-zero value.
void reject_mixture_of_experts(const YamlField& root) {
  for (const std::string& key : root.keys()) {
    const bool moe = key == "num_local_experts" || key == "num_experts" || key == "num_experts_per_tok" ||
                     key == "n_routed_experts" || key.rfind("moe_", 0) == 0;
    if (!moe || is_null(root, key)) continue;
    const YamlField field = root.get(key);
    if (field.is_scalar() && (field.node().Scalar() == "0" || field.node().Scalar() == "false")) continue;
    field.fail("a dense model (mixture-of-experts field '" + key + "' is not supported)",
               "whale plans dense decoders: gpt2, gpt_neox, llama, mistral, qwen2");
  }
}

// A dropout probability of the config, when it names one: in [0, 1).
std::optional<double> dropout_of(const YamlField& root, const std::string& key) {
  if (is_null(root, key)) return std::nullopt;
  const YamlField field = root.get(key);
  const double p = field.non_negative_number();
  if (p >= 1) field.fail("expected a dropout probability in [0, 1), got " + field.text());
  return p;
}

// The llama-style decoders: Llama, Mistral, Qwen2.
void read_llama_style(const YamlField& root, const std::string& model_type, Model& model) {
  model.family = "llama";
  model.hidden = root.get("hidden_size").positive_integer();
  model.ffn_hidden = root.get("intermediate_size").positive_integer();
  model.num_layers = root.get("num_hidden_layers").positive_integer();
  model.heads = root.get("num_attention_heads").positive_integer();
  model.vocabulary = root.get("vocab_size").positive_integer();
  model.sequence = root.get("max_position_embeddings").positive_integer();
  if (!is_null(root, "num_key_value_heads")) {
    const YamlField kv = root.get("num_key_value_heads");
    model.kv_heads = kv.positive_integer();
    if (model.heads % model.kv_heads != 0) kv.fail("expected num_key_value_heads to divide num_attention_heads");
  }
  if (!is_null(root, "head_dim") && root.get("head_dim").positive_integer() * model.heads != model.hidden) {
    root.get("head_dim").fail("head_dim = hidden_size / num_attention_heads (" +
                              std::to_string(model.hidden / model.heads) + ")",
                              "models with a wider or narrower head_dim are not supported");
  }
  model.tie_embeddings = root.boolean_or("tie_word_embeddings", false);
  model.rope_theta = is_null(root, "rope_theta") ? 10000 : root.get("rope_theta").positive_number();
  // Qwen2 always has q, k, v biases; Llama has them when attention_bias is true.
  model.qkv_bias = model_type == "qwen2" || root.boolean_or("attention_bias", false);
  if (root.has("mlp_bias") && root.get("mlp_bias").boolean()) {
    root.get("mlp_bias").fail("mlp_bias false", "MLP biases are not part of whale's llama block");
  }
  // transformers' LlamaConfig, MistralConfig and Qwen2Config: attention_dropout (0.0).
  model.attention_dropout = dropout_of(root, "attention_dropout");
  const bool window_used = model_type == "qwen2" ? root.boolean_or("use_sliding_window", false) : true;
  if (window_used && !is_null(root, "sliding_window")) {
    const YamlField window = root.get("sliding_window");
    if (window.positive_integer() < model.sequence) {
      window.fail("no sliding window shorter than max_position_embeddings (" + std::to_string(model.sequence) + ")",
                  "sliding-window attention changes the attention compute, which whale does not model");
    }
  }
}

void read_gpt2(const YamlField& root, Model& model) {
  model.family = "gpt";
  model.hidden = root.get("n_embd").positive_integer();
  model.num_layers = root.get("n_layer").positive_integer();
  model.heads = root.get("n_head").positive_integer();
  model.vocabulary = root.get("vocab_size").positive_integer();
  model.sequence = root.has("n_positions") ? root.get("n_positions").positive_integer()
                                           : root.get("n_ctx").positive_integer();
  model.ffn_hidden = is_null(root, "n_inner") ? 4 * model.hidden : root.get("n_inner").positive_integer();
  // transformers' PretrainedConfig ties the embeddings unless told otherwise.
  model.tie_embeddings = root.boolean_or("tie_word_embeddings", true);
  // GPT2Config: attn_pdrop on the attention probabilities, resid_pdrop after the projections
  // (embd_pdrop after the embeddings, which whale ties to the hidden dropout); 0.1 each.
  model.attention_dropout = dropout_of(root, "attn_pdrop");
  model.hidden_dropout = dropout_of(root, "resid_pdrop");
}

void read_gpt_neox(const YamlField& root, Model& model) {
  model.family = "gpt";
  model.hidden = root.get("hidden_size").positive_integer();
  model.num_layers = root.get("num_hidden_layers").positive_integer();
  model.heads = root.get("num_attention_heads").positive_integer();
  model.ffn_hidden = root.get("intermediate_size").positive_integer();
  model.vocabulary = root.get("vocab_size").positive_integer();
  model.sequence = root.get("max_position_embeddings").positive_integer();
  model.tie_embeddings = root.boolean_or("tie_word_embeddings", false);
  // Rotary positions on rotary_pct of each head (no position table); the base is carried.
  if (root.has("rotary_pct")) root.get("rotary_pct").positive_number();
  const char* base_key = root.has("rotary_emb_base") ? "rotary_emb_base" : "rope_theta";
  model.rope_theta = is_null(root, base_key) ? 10000 : root.get(base_key).positive_number();
  // GPTNeoXConfig: attention_dropout and hidden_dropout, 0.0 each when the config omits them.
  model.attention_dropout = dropout_of(root, "attention_dropout").value_or(0.0);
  model.hidden_dropout = dropout_of(root, "hidden_dropout").value_or(0.0);
}

}  // namespace

bool is_hf_config(const YamlField& root, const std::string& path) {
  return is_json_file_name(path) || (root.is_map() && root.has("model_type"));
}

Model parse_hf_config(const YamlField& root) {
  if (!root.is_map() || !root.has("model_type")) {
    root.fail("a Hugging Face config.json with a model_type", "or give a whale model YAML (docs/model.md)");
  }
  reject_mixture_of_experts(root);
  Model model;
  model.source_file = root.file();
  model.name = file_stem(root.file());
  const YamlField type = root.get("model_type");
  const std::string model_type = type.text();
  if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2") {
    read_llama_style(root, model_type, model);
  } else if (model_type == "gpt2") {
    read_gpt2(root, model);
  } else if (model_type == "gpt_neox") {
    read_gpt_neox(root, model);
  } else {
    type.fail("model_type gpt2, gpt_neox, llama, mistral or qwen2, got '" + model_type + "'",
              "write a whale model YAML for other architectures (docs/model.md)");
  }
  if (model.hidden % model.heads != 0) root.fail("attention heads that divide the hidden size");
  model.training.precision = Precision::bf16;
  if (!is_null(root, "torch_dtype")) {
    const YamlField dtype = root.get("torch_dtype");
    const std::string text = dtype.text();
    if (text == "float16") model.training.precision = Precision::fp16;
    else if (text == "float32") model.training.precision = Precision::fp32;
    else if (text != "bfloat16") dtype.fail("torch_dtype bfloat16, float16 or float32, got '" + text + "'");
  }
  model.training.global_batch = std::max(1, static_cast<int>(std::lround(kDefaultBatchTokens / model.sequence)));
  generate_layers(model, model.training.precision);
  return model;
}

}  // namespace whale::plan

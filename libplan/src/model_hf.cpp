// File: model_hf.cpp
// Reads a Hugging Face transformers config.json (JSON is YAML 1.2 flow syntax, so yaml-cpp
// parses it) into a family model: GPT-2, GPT-NeoX and the Llama/Mistral/Qwen2 dense decoders.
// Mixture-of-experts decoders (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE) get their moe block from
// model_hf_moe.cpp. Fields that change the compute in ways whale does not model (experts on a
// dense model type, multi-head latent attention, MLP biases) fail naming the field; a sliding
// window bounds the training sequence (set_sequence). Schema and mapping: docs/model.md,
// docs/moe.md.
#include <algorithm>
#include <climits>
#include <cmath>

#include "spec_yaml.h"
#include "whale/plan/check.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {

// Tokens per global batch when the config gives none: Llama 2's 4M-token batch (Touvron et al.
// 2023, section 2.2); --global-batch overrides it.
constexpr int kDefaultBatchTokens = 4194304;

// Every number this loader reads, with its range: an integer in [1, high], or a real in
// (0, high]. The limits are those of the model YAML (limits.h); docs/limits.md lists them.
struct HfRange {
  const char* key;
  double high;
  bool integer;
  const char* what;  // integers: what the limit bounds, for the message; reals: the hint
};
constexpr double kDimension = kMaxModelDimension;
constexpr double kLayers = kMaxLayers;
const HfRange kHfRanges[] = {
    {"hidden_size", kDimension, true, "units of a model dimension"},
    {"n_embd", kDimension, true, "units of a model dimension"},
    {"intermediate_size", kDimension, true, "units of a model dimension"},
    {"n_inner", kDimension, true, "units of a model dimension"},
    {"num_hidden_layers", kLayers, true, "layers"},
    {"n_layer", kLayers, true, "layers"},
    {"num_attention_heads", kDimension, true, "attention heads"},
    {"n_head", kDimension, true, "attention heads"},
    {"num_key_value_heads", kDimension, true, "attention heads"},
    {"head_dim", kDimension, true, "units of a model dimension"},
    {"vocab_size", kDimension, true, "units of a model dimension"},
    {"max_position_embeddings", kDimension, true, "units of a model dimension"},
    {"n_positions", kDimension, true, "units of a model dimension"},
    {"n_ctx", kDimension, true, "units of a model dimension"},
    {"sliding_window", INT_MAX, true, "tokens of a sliding window"},
    {"rope_theta", 1e30, false, "the base of the rotary position angles"},
    {"rotary_emb_base", 1e30, false, "the base of the rotary position angles"},
    {"rotary_pct", 1, false, "the fraction of each head that rotary positions cover"},
    {"num_local_experts", kDimension, true, "experts"},
    {"num_experts", kDimension, true, "experts"},
    {"num_experts_per_tok", kDimension, true, "experts"},
    {"moe_intermediate_size", kDimension, true, "units of a model dimension"},
    {"shared_expert_intermediate_size", kDimension, true, "units of a model dimension"},
    {"decoder_sparse_step", kLayers, true, "layers"},
};

const HfRange& range_of(const std::string& key) {
  const HfRange* found = nullptr;
  for (const HfRange& range : kHfRanges) {
    if (key == range.key) found = &range;
  }
  WHALE_CHECK(found, "no range for config.json key '" + key + "'");
  return *found;
}

// The integer at `key`, in its range of kHfRanges.
int hf_integer(const YamlField& root, const std::string& key) {
  const HfRange& range = range_of(key);
  return static_cast<int>(hf_config_number_field(root, key).count(static_cast<int64_t>(range.high), range.what));
}

// The real number at `key`, in its range of kHfRanges.
double hf_number(const YamlField& root, const std::string& key) {
  const HfRange& range = range_of(key);
  const YamlField field = hf_config_number_field(root, key);
  const double value = field.positive_number();
  if (value > range.high) {
    field.fail("expected a number in (0, " + format_number(range.high) + "], got '" + field.node().Scalar() + "'",
               range.what);
  }
  return value;
}

// The heads of `heads_key` divide the hidden size of `hidden_key`.
void check_heads_divide(const YamlField& root, const char* heads_key, const char* hidden_key, const Model& model) {
  if (model.hidden % model.heads == 0) return;
  root.get(heads_key).fail(std::string("expected ") + heads_key + " to divide " + hidden_key + " (" +
                               std::to_string(model.hidden) + "), got " + std::to_string(model.heads),
                           "each attention head takes hidden / heads columns");
}

// The mapping with each repeated key's last value, at the place of its first (what Python's
// json and transformers read), at every level.
YAML::Node last_key_wins(const YAML::Node& node) {
  if (node.IsSequence()) {
    YAML::Node out = node;
    for (std::size_t i = 0; i < node.size(); ++i) out[i] = last_key_wins(node[i]);
    return out;
  }
  if (!node.IsMap()) return node;
  std::vector<std::pair<std::string, YAML::Node>> entries;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const YAML::Node value = last_key_wins(entry.second);
    auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == key; });
    if (it == entries.end()) entries.emplace_back(key, value);
    else it->second = value;
  }
  if (entries.size() == node.size()) return node;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& [key, value] : entries) out[key] = value;
  return out;
}

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

// The shape under the keys that GPT-NeoX and the llama-style decoders share. With
// `reads_head_dim` (the llama-style decoders), a head_dim other than hidden_size /
// num_attention_heads (Qwen3, Gemma) is the model's own head width; equal to it, it is the
// default and is left unset.
void read_shape(const YamlField& root, Model& model, bool reads_head_dim) {
  model.hidden = hf_integer(root, "hidden_size");
  model.ffn_hidden = hf_integer(root, "intermediate_size");
  model.num_layers = hf_integer(root, "num_hidden_layers");
  model.heads = hf_integer(root, "num_attention_heads");
  if (reads_head_dim && !is_null(root, "head_dim") &&
      int64_t{hf_integer(root, "head_dim")} * model.heads != model.hidden) {
    model.head_dim = hf_integer(root, "head_dim");
    if (int64_t{model.head_dim} * model.heads > kMaxModelDimension) {
      root.get("head_dim").fail("num_attention_heads x head_dim at most " + std::to_string(kMaxModelDimension) +
                                    ", got " + std::to_string(int64_t{model.head_dim} * model.heads),
                                "whale's limit on a model dimension (docs/limits.md)");
    }
  } else {
    check_heads_divide(root, "num_attention_heads", "hidden_size", model);
  }
  model.vocabulary = hf_integer(root, "vocab_size");
  model.sequence = hf_integer(root, "max_position_embeddings");
}

// A dropout probability of the config, when it names one: in [0, 1).
std::optional<double> dropout_of(const YamlField& root, const std::string& key) {
  if (is_null(root, key)) return std::nullopt;
  const YamlField field = hf_config_number_field(root, key);
  const double p = field.non_negative_number();
  if (p >= 1) field.fail("expected a dropout probability in [0, 1), got " + field.text());
  return p;
}

// The llama-style decoders: Llama, Mistral, Qwen2.
void read_llama_style(const YamlField& root, const std::string& model_type, Model& model) {
  model.family = "llama";
  read_shape(root, model, true);
  if (!is_null(root, "num_key_value_heads")) {
    const YamlField kv = root.get("num_key_value_heads");
    model.kv_heads = hf_integer(root, "num_key_value_heads");
    if (model.heads % model.kv_heads != 0) {
      kv.fail("expected num_key_value_heads to divide num_attention_heads (" + std::to_string(model.heads) +
              "), got " + std::to_string(model.kv_heads));
    }
  }
  model.tie_embeddings = root.boolean_or("tie_word_embeddings", false);
  model.rope_theta = is_null(root, "rope_theta") ? 10000 : hf_number(root, "rope_theta");
  // Qwen2 always has q, k, v biases; Llama has them when attention_bias is true.
  model.qkv_bias = model_type == "qwen2" || model_type == "qwen2_moe" || root.boolean_or("attention_bias", false);
  if (root.has("mlp_bias") && root.get("mlp_bias").boolean()) {
    root.get("mlp_bias").fail("mlp_bias false", "MLP biases are not part of whale's llama block");
  }
  // transformers' LlamaConfig, MistralConfig and Qwen2Config: attention_dropout (0.0).
  model.attention_dropout = dropout_of(root, "attention_dropout");
  const bool window_used = model_type.rfind("qwen", 0) == 0 ? root.boolean_or("use_sliding_window", false) : true;
  // Within its window a sliding-window attention is full attention: the model trains at most
  // at the window's length (the default sequence when shorter than max_position_embeddings).
  if (window_used && !is_null(root, "sliding_window")) {
    model.sliding_window = static_cast<int>(hf_integer(root, "sliding_window"));
    model.sequence = std::min(model.sequence, model.sliding_window);
  }
}

void read_gpt2(const YamlField& root, Model& model) {
  model.family = "gpt";
  model.hidden = hf_integer(root, "n_embd");
  model.num_layers = hf_integer(root, "n_layer");
  model.heads = hf_integer(root, "n_head");
  check_heads_divide(root, "n_head", "n_embd", model);
  model.vocabulary = hf_integer(root, "vocab_size");
  model.sequence = hf_integer(root, root.has("n_positions") ? "n_positions" : "n_ctx");
  // hidden <= kMaxModelDimension: 4 x hidden cannot overflow.
  model.ffn_hidden = is_null(root, "n_inner") ? 4 * model.hidden : hf_integer(root, "n_inner");
  // transformers' PretrainedConfig ties the embeddings unless told otherwise.
  model.tie_embeddings = root.boolean_or("tie_word_embeddings", true);
  // GPT2Config: attn_pdrop on the attention probabilities, resid_pdrop after the projections
  // (embd_pdrop after the embeddings, which whale ties to the hidden dropout); 0.1 each.
  model.attention_dropout = dropout_of(root, "attn_pdrop");
  model.hidden_dropout = dropout_of(root, "resid_pdrop");
}

void read_gpt_neox(const YamlField& root, Model& model) {
  model.family = "gpt";
  read_shape(root, model, false);
  model.tie_embeddings = root.boolean_or("tie_word_embeddings", false);
  // Rotary positions on rotary_pct of each head (no position table); the base is carried.
  if (root.has("rotary_pct")) hf_number(root, "rotary_pct");
  const char* base_key = root.has("rotary_emb_base") ? "rotary_emb_base" : "rope_theta";
  model.rope_theta = is_null(root, base_key) ? 10000 : hf_number(root, base_key);
  // GPTNeoXConfig: attention_dropout and hidden_dropout, 0.0 each when the config omits them.
  model.attention_dropout = dropout_of(root, "attention_dropout").value_or(0.0);
  model.hidden_dropout = dropout_of(root, "hidden_dropout").value_or(0.0);
}

}  // namespace

int hf_config_integer(const YamlField& root, const std::string& key) { return hf_integer(root, key); }

YamlField hf_config_number_field(const YamlField& root, const std::string& key) {
  YamlField field = root.get(key);
  // yaml-cpp tags a quoted scalar "!" and a plain one "?": JSON's strings are the quoted ones.
  if (field.is_scalar() && field.node().Tag() == "!") {
    field.fail("expected a JSON number, got the string \"" + field.node().Scalar() + "\"",
               "transformers writes numbers without quotes: remove them");
  }
  return field;
}

bool hf_config_is_null(const YamlField& root, const std::string& key) { return is_null(root, key); }

bool is_hf_config(const YamlField& root, const std::string& path) {
  return is_json_file_name(path) || (root.is_map() && root.has("model_type"));
}

Model parse_hf_config(const YamlField& file_root) {
  const YamlField root(last_key_wins(file_root.node()), file_root.file(), file_root.path());
  if (!root.is_map() || !root.has("model_type")) {
    root.fail("a Hugging Face config.json with a model_type", "or give a whale model YAML (docs/model.md)");
  }
  const YamlField type = root.get("model_type");
  const std::string model_type = type.text();
  const bool moe_type = is_hf_moe_type(model_type);
  reject_latent_attention(root);  // DeepSeek's attention first: what whale lacks to read it
  if (!moe_type) reject_mixture_of_experts(root);
  Model model;
  model.source_file = root.file();
  model.name = file_stem(root.file());
  if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2" || moe_type) {
    read_llama_style(root, model_type, model);
    if (moe_type) model.moe = read_hf_moe(root, model_type, model);
  } else if (model_type == "gpt2") {
    read_gpt2(root, model);
  } else if (model_type == "gpt_neox") {
    read_gpt_neox(root, model);
  } else {
    type.fail("model_type gpt2, gpt_neox, llama, mistral, qwen2, mixtral, qwen2_moe, qwen3_moe or olmoe, got '" + model_type + "'",
              "write a whale model YAML for other architectures (docs/model.md)");
  }
  model.training.precision = Precision::bf16;
  if (!is_null(root, "torch_dtype")) {
    const YamlField dtype = root.get("torch_dtype");
    const std::string text = dtype.text();
    if (text == "float16") model.training.precision = Precision::fp16;
    else if (text == "float32") model.training.precision = Precision::fp32;
    else if (text != "bfloat16") dtype.fail("torch_dtype bfloat16, float16 or float32, got '" + text + "'");
  }
  model.training.global_batch_tokens = kDefaultBatchTokens;
  model.training.global_batch = batch_of_tokens(kDefaultBatchTokens, model.sequence);
  generate_layers(model, model.training.precision);
  return model;
}

}  // namespace whale::plan

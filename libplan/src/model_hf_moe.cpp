// File: model_hf_moe.cpp
// The moe block of a Hugging Face mixture-of-experts config.json (docs/moe.md): Mixtral
// (num_local_experts, num_experts_per_tok, router_aux_loss_coef), Qwen2-MoE and Qwen3-MoE
// (num_experts, moe_intermediate_size, shared_expert_intermediate_size, decoder_sparse_step,
// mlp_only_layers, norm_topk_prob) and OLMoE (num_experts, intermediate_size per expert).
#include "spec_yaml.h"

namespace whale::plan {
namespace {

// Blocks b with (b + 1) % step == 0 are sparse (transformers' Qwen2MoeDecoderLayer), less those
// in mlp_only_layers: as whale's pattern, first_dense_layers and layer_interval.
void read_layer_pattern(const YamlField& root, const Model& model, MoeSpec& spec) {
  const int step = hf_config_is_null(root, "decoder_sparse_step") ? 1 : hf_config_integer(root, "decoder_sparse_step");
  spec.layer_interval = step;
  spec.first_dense_layers = step - 1;
  if (hf_config_is_null(root, "mlp_only_layers")) return;
  const YamlField dense = root.get("mlp_only_layers");
  const std::vector<YamlField> layers = dense.elements();
  // Expressible: the first k blocks dense, then every block sparse (step 1).
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].integer() != static_cast<int>(i) || step != 1) {
      dense.fail("mlp_only_layers as the first blocks [0, 1, ..., k-1] with decoder_sparse_step 1",
                 "whale's moe block keeps its first first_dense_layers blocks dense, then every layer_interval-th is MoE");
    }
  }
  spec.first_dense_layers = static_cast<int>(layers.size());
  if (spec.first_dense_layers >= model.num_layers) dense.fail("at least one block with experts");
}

}  // namespace

bool is_hf_moe_type(const std::string& model_type) {
  return model_type == "mixtral" || model_type == "qwen2_moe" || model_type == "qwen3_moe" || model_type == "olmoe";
}

void reject_latent_attention(const YamlField& root) {
  for (const char* key : {"kv_lora_rank", "q_lora_rank"}) {
    if (hf_config_is_null(root, key)) continue;
    root.get(key).fail(std::string("no multi-head latent attention (") + key + ")",
                       "whale's blocks have multi-head or grouped-query attention; DeepSeek-V2/V3's compressed "
                       "key-value projections are not modelled");
  }
}

MoeSpec read_hf_moe(const YamlField& root, const std::string& model_type, const Model& model) {
  MoeSpec spec;
  spec.router = MoeRouter::softmax_topk;
  const char* experts_key = model_type == "mixtral" ? "num_local_experts" : "num_experts";
  spec.experts = hf_config_integer(root, experts_key);
  spec.top_k = hf_config_integer(root, "num_experts_per_tok");
  spec.expert_ffn_hidden = model.ffn_hidden;  // Mixtral and OLMoE: intermediate_size per expert
  if (model_type == "qwen2_moe" || model_type == "qwen3_moe") {
    spec.expert_ffn_hidden = hf_config_integer(root, "moe_intermediate_size");
    read_layer_pattern(root, model, spec);
  }
  if (model_type == "qwen2_moe" && !hf_config_is_null(root, "shared_expert_intermediate_size")) {
    // One shared expert of that width; whale counts shared experts of the routed width. A
    // width of 0 is no shared expert (transformers builds a shared MLP of no width).
    const YamlField shared = hf_config_number_field(root, "shared_expert_intermediate_size");
    const int width = shared.non_negative_integer();
    if (width % spec.expert_ffn_hidden != 0) {
      shared.fail("a multiple of moe_intermediate_size (" + std::to_string(spec.expert_ffn_hidden) + "), got " + std::to_string(width),
                  "whale's shared experts each have the routed experts' width");
    }
    spec.shared_experts = width / spec.expert_ffn_hidden;
  }
  // norm_topk_prob (Qwen-MoE, OLMoE): whether the top-k gates are renormalized; the cost is the
  // same either way, and whale-run renormalizes (docs/moe.md).
  if (!hf_config_is_null(root, "norm_topk_prob")) root.get("norm_topk_prob").boolean();
  // transformers' defaults: MixtralConfig 0.001, Qwen2MoeConfig 0.001, OlmoeConfig 0.01.
  if (!hf_config_is_null(root, "router_aux_loss_coef")) {
    spec.aux_loss_coeff = hf_config_number_field(root, "router_aux_loss_coef").non_negative_number();
  } else {
    spec.aux_loss_coeff = model_type == "olmoe" ? 0.01 : 0.001;
  }
  if (const std::optional<MoeProblem> problem = find_moe_problem(spec, model.num_layers)) {
    const std::string key = problem->field == "experts" ? experts_key : problem->field == "top_k" ? "num_experts_per_tok" : "";
    (key.empty() || !root.has(key) ? root : root.get(key)).fail(problem->expected, problem->hint);
  }
  return spec;
}

}  // namespace whale::plan

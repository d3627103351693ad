// File: moe_yaml.cpp
// Reads and writes a model's `moe:` block (docs/moe.md): each key's type at its YAML path, then
// the MoeSpec's rules (find_moe_problem), each failure at the field that breaks it.
#include "spec_yaml.h"
#include "whale/plan/limits.h"
#include "yaml_writer.h"

namespace whale::plan {

MoeSpec parse_moe(const YamlField& field, const Model& model) {
  field.expect_keys({"experts", "top_k", "shared_experts", "expert_ffn_hidden", "capacity_factor",
                     "router", "aux_loss_coeff", "bias_update_rate", "first_dense_layers", "layer_interval",
                     "load_imbalance"});
  MoeSpec spec;
  spec.experts = field.get("experts").integer();
  spec.top_k = field.get("top_k").integer();
  if (field.has("shared_experts")) spec.shared_experts = field.get("shared_experts").integer();
  spec.expert_ffn_hidden = model.ffn_hidden;
  if (field.has("expert_ffn_hidden")) {
    spec.expert_ffn_hidden = static_cast<int>(field.get("expert_ffn_hidden").count(kMaxModelDimension, "units of a model dimension"));
  }
  if (field.has("capacity_factor")) spec.capacity_factor = field.get("capacity_factor").number();
  if (field.has("router")) {
    const YamlField router = field.get("router");
    if (!parse_moe_router(router.text(), &spec.router)) {
      router.fail("unknown router '" + router.text() + "'", "use softmax_topk (Mixtral, Qwen-MoE) or sigmoid_bias (DeepSeek-V3)");
    }
  }
  if (field.has("aux_loss_coeff")) spec.aux_loss_coeff = field.get("aux_loss_coeff").number();
  if (field.has("bias_update_rate")) spec.bias_update_rate = field.get("bias_update_rate").number();
  if (field.has("first_dense_layers")) spec.first_dense_layers = field.get("first_dense_layers").integer();
  if (field.has("layer_interval")) spec.layer_interval = field.get("layer_interval").integer();
  if (field.has("load_imbalance")) spec.load_imbalance = field.get("load_imbalance").number();
  if (spec.experts > kMaxModelDimension) {
    field.get("experts").fail("expected at most " + std::to_string(kMaxModelDimension) + " experts, got " + std::to_string(spec.experts));
  }
  if (const std::optional<MoeProblem> problem = find_moe_problem(spec, model.num_layers)) {
    const YamlField at = field.has(problem->field) ? field.get(problem->field) : field;
    at.fail(problem->expected, problem->hint);
  }
  return spec;
}

void emit_moe(YAML::Emitter& out, const MoeSpec& spec) {
  out << YAML::Key << "moe" << YAML::Value << YAML::BeginMap;
  emit_number_field(out, "experts", spec.experts);
  emit_number_field(out, "top_k", spec.top_k);
  emit_number_field(out, "shared_experts", spec.shared_experts);
  emit_number_field(out, "expert_ffn_hidden", spec.expert_ffn_hidden);
  emit_number_field(out, "capacity_factor", spec.capacity_factor);
  emit_text_field(out, "router", to_string(spec.router));
  emit_number_field(out, "aux_loss_coeff", spec.aux_loss_coeff);
  if (spec.router == MoeRouter::sigmoid_bias) emit_number_field(out, "bias_update_rate", spec.bias_update_rate);
  emit_number_field(out, "first_dense_layers", spec.first_dense_layers);
  emit_number_field(out, "layer_interval", spec.layer_interval);
  emit_number_field(out, "load_imbalance", spec.load_imbalance);
  out << YAML::EndMap;
}

}  // namespace whale::plan

// File: moe_parameters.cpp
// The parameter list of a mixture-of-experts block's feed-forward part and the checks of the
// model's MoE fields for whale-run.
#include "model/moe_parameters.h"

#include "whale/plan/error.h"

namespace whale::exec {

using gpt::Init;
using gpt::ParameterSpec;
using gpt::Split;

void validate_moe(const plan::Model& model) {
  if (!model.moe) return;
  const std::string& file = model.source_file;
  if (const auto problem = plan::find_moe_problem(*model.moe, model.num_layers))
    throw Error(file, "moe." + problem->field, problem->expected, problem->hint);
}

int expert_parameter_count(ExpertKind kind) { return kind == ExpertKind::gelu ? 4 : 3; }

std::vector<ParameterSpec> moe_parameters(const std::string& prefix, const plan::MoeSpec& moe,
                                          ExpertKind kind, std::size_t channels, double stddev,
                                          double residual_stddev) {
  const std::size_t C = channels, F = static_cast<std::size_t>(moe.expert_ffn_hidden);
  std::vector<ParameterSpec> specs;
  specs.push_back({prefix + "moe.router.weight", static_cast<std::size_t>(moe.experts), C,
                   Split::none, Init::normal, stddev, {}});
  if (moe.router == plan::MoeRouter::sigmoid_bias) {
    specs.push_back({prefix + "moe.router.expert_bias", static_cast<std::size_t>(moe.experts), 1,
                     Split::none, Init::zeros, 0.0, {}});
    specs.back().trained = false;
  }
  auto mlp = [&](const std::string& p, int expert) {
    std::vector<ParameterSpec> m;
    if (kind == ExpertKind::gelu) {
      m.push_back({p + "fc1.weight", F, C, Split::rows, Init::normal, stddev, {}});
      m.push_back({p + "fc1.bias", F, 1, Split::rows, Init::zeros, 0.0, {}});
      m.push_back({p + "fc2.weight", C, F, Split::cols, Init::normal, residual_stddev, {}});
      m.push_back({p + "fc2.bias", C, 1, Split::none, Init::zeros, 0.0, {}});
    } else {
      m.push_back({p + "gate.weight", F, C, Split::rows, Init::normal, stddev, {}});
      m.push_back({p + "up.weight", F, C, Split::rows, Init::normal, stddev, {}});
      m.push_back({p + "down.weight", C, F, Split::cols, Init::normal, residual_stddev, {}});
    }
    for (ParameterSpec& s : m) {
      s.expert = expert;
      specs.push_back(s);
    }
  };
  for (int s = 0; s < moe.shared_experts; ++s) mlp(prefix + "moe.shared." + std::to_string(s) + ".", -1);
  for (int e = 0; e < moe.experts; ++e) mlp(prefix + "moe.experts." + std::to_string(e) + ".", e);
  return specs;
}

}  // namespace whale::exec

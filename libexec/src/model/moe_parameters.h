// File: moe_parameters.h
// Private: the parameters of a mixture-of-experts block's feed-forward part (the router, the
// shared experts, the routed experts), how they are named and initialised, and the checks of
// the model's MoE fields that whale-run trains.
#pragma once

#include <string>
#include <vector>

#include "model/gpt_parameters.h"
#include "whale/plan/model.h"

namespace whale::exec {

/// The MLP of each expert: GELU with biases (GPT: fc1, fc2) or SwiGLU (Llama: gate, up, down).
enum class ExpertKind { gelu, swiglu };

/// Throws whale::Error naming the `moe` field when `model.moe` is set and breaks
/// plan::find_moe_problem's rules (a model built in code skips the YAML's checks).
void validate_moe(const plan::Model& model);

/// The MoE part of block parameters under `prefix` ("layers.b."), in this order: the router
/// "moe.router.weight" (E, C); for sigmoid_bias its bias "moe.router.expert_bias" (E), zeros,
/// not trained (ParameterSpec::trained false; the stage updates it); per shared expert s the MLP "moe.shared.s.*"; per routed expert
/// e the MLP "moe.experts.e.*" (ParameterSpec::expert = e). An MLP is fc1.weight (F, C),
/// fc1.bias (F), fc2.weight (C, F), fc2.bias (C) for gelu; gate.weight, up.weight (F, C),
/// down.weight (C, F) for swiglu. Inputs-side weights and the router are normal(stddev),
/// output weights normal(residual_stddev), biases zero. Expert tensor parallelism (expert_tp =
/// the stage's tp) splits every expert MLP as Megatron's: fc1 (weight and bias), gate and up by
/// rows (column-parallel), fc2.weight and down by columns (row-parallel); the router, its bias
/// and fc2.bias are held whole by every tp rank.
std::vector<gpt::ParameterSpec> moe_parameters(const std::string& prefix,
                                               const plan::MoeSpec& moe, ExpertKind kind,
                                               std::size_t channels, double stddev,
                                               double residual_stddev);

/// Parameters per expert MLP: 4 for gelu, 3 for swiglu.
int expert_parameter_count(ExpertKind kind);

}  // namespace whale::exec

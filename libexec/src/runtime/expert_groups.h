// File: expert_groups.h
// Private: the expert layouts whale-run runs (the groups are rank_communicators.h's
// expert_layout_groups).
#pragma once

#include "whale/plan/plan.h"

namespace whale::exec {

/// Throws whale::Error naming the plan file and `stages[i].ep` (or expert_tp) for an expert
/// layout whale-run cannot run: ep < 1; ep > 1 in a dense model; ep x expert_tp not dividing
/// the stage's devices, or ep the experts; an expert_tp neither dividing the stage's tp nor a
/// multiple of it, or a stage of mixed tp.
void validate_expert_layout(const plan::Plan& plan);

/// Whether the routed experts of a mixture-of-experts stage are laid out apart from attention
/// (ep > 1, or an expert_tp other than tp): their gradients then go over the expert-dp group.
bool separate_expert_layout(const plan::Stage& stage);

}  // namespace whale::exec

// File: stage_text.h
// A stage's devices, tensor-parallel degrees and shares in a few words, as the planner's plan
// description and the simulator's stage table print them.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/plan.h"

namespace whale::plan {

/// "a100-sxm4-80gb", or "a100-sxm4-80gb+v100-sxm2-32gb" for a stage on several device models:
/// its devices' models in order of first appearance.
std::string stage_device_models(const Plan& plan, const Stage& stage);

/// A stage's tp: "4", or with mixed tp each run of equal degrees as degree(replicas), e.g.
/// "1(8),4(2)" for eight replicas at tp 1 and two at tp 4.
std::string stage_tp_text(const Stage& stage);

/// Replica shares: "2 each" when all are equal, "3,2,1" when no two neighbours are, else each
/// run of equal shares as share(replicas) and a lone one plain, e.g. "3(128),2(127),1".
std::string shares_text(const std::vector<int>& shares);

}  // namespace whale::plan

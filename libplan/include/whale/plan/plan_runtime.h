// File: plan_runtime.h
// What of a plan whale-run executes today: the strategies the planner and the simulator know
// but the runtime does not run yet, so that whale-run refuses such a plan up front and
// whale-plan --runnable can search without them.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/search_estimate.h"

namespace whale::plan {

/// The YAML paths of the features of `plan` that whale-run does not execute, in stage order,
/// e.g. "stages[2].sequence_parallel", "stages[2].shard_gradients". Empty when it runs all.
std::vector<std::string> unsupported_by_runtime(const Plan& plan);

/// Throws whale::Error naming plan.source_file and the first unsupported feature (with how
/// many more there are), with a hint to re-plan with whale-plan --runnable. Returns when the
/// runtime executes the whole plan.
void check_runnable(const Plan& plan);

/// The search strategies of what whale-run executes: no sequence parallelism, no ZeRO-2.
SearchStrategies runnable_strategies();

}  // namespace whale::plan

// File: plan_runtime.h
// What of a plan whale-run executes today: the strategies the planner and the simulator know
// but the runtime does not run yet, so that whale-run refuses such a plan up front and
// whale-plan --runnable can search without them. Today there are none: whale-run executes
// sequence parallelism and sharded gradients (ZeRO-2) too.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/search_estimate.h"

namespace whale::plan {

/// The YAML paths of the features of `plan` that whale-run does not execute, in stage order
/// (e.g. "stages[2].<field>"). Empty when it runs all, which today is every valid plan.
std::vector<std::string> unsupported_by_runtime(const Plan& plan);

/// Throws whale::Error naming plan.source_file and the first unsupported feature (with how
/// many more there are), with a hint to re-plan with whale-plan --runnable. Returns when the
/// runtime executes the whole plan.
void check_runnable(const Plan& plan);

/// The search strategies of what whale-run executes: today all of them (sequence
/// parallelism and ZeRO-2 included).
SearchStrategies runnable_strategies();

}  // namespace whale::plan

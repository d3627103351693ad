// File: plan_runtime.cpp
// The runtime's feature check: which planned strategies whale-run does not execute. Today it
// executes every one (sequence parallelism and sharded gradients included) and trains every
// optimizer the planner prices (AdamW, Adam, SGD). A strategy the planner learns before the
// runtime belongs here.
#include "whale/plan/plan_runtime.h"

#include "whale/plan/error.h"

namespace whale::plan {

std::vector<std::string> unsupported_by_runtime(const Plan&) { return {}; }

void check_runnable(const Plan& plan) {
  const std::vector<std::string> features = unsupported_by_runtime(plan);
  if (features.empty()) return;
  const std::string more =
      features.size() > 1 ? " (and " + std::to_string(features.size() - 1) + " more)" : "";
  const std::string field = features.front().substr(features.front().find('.') + 1);
  throw Error(plan.source_file, features.front(),
              "only strategies whale-run executes, got '" + field + ": true', which it does not "
              "execute yet" + more,
              "simulate it with whale-sim, or re-plan with whale-plan --runnable");
}

SearchStrategies runnable_strategies() { return SearchStrategies{}; }

}  // namespace whale::plan

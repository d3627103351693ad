// File: plan_runtime.cpp
// The runtime's feature check: sequence parallelism and sharded gradients are planned and
// simulated, not yet executed by whale-run.
#include "whale/plan/plan_runtime.h"

#include "whale/plan/error.h"

namespace whale::plan {

std::vector<std::string> unsupported_by_runtime(const Plan& plan) {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const std::string stage = "stages[" + std::to_string(s) + "].";
    if (plan.stages[s].sequence_parallel) out.push_back(stage + "sequence_parallel");
    if (plan.stages[s].shard_gradients) out.push_back(stage + "shard_gradients");
  }
  return out;
}

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

SearchStrategies runnable_strategies() {
  SearchStrategies s;
  s.sequence_parallel = false;
  s.shard_gradients = false;
  return s;
}

}  // namespace whale::plan

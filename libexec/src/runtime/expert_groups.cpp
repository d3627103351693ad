// File: expert_groups.cpp
// validate_expert_layout: the expert layouts whale-run runs.
#include "runtime/expert_groups.h"

#include <string>
#include <vector>

#include "whale/plan/error.h"

namespace whale::exec {

bool separate_expert_layout(const plan::Stage& stage) {
  return stage.ep > 1 || stage.expert_tp_degree() != stage.tp;
}

void validate_expert_layout(const plan::Plan& plan) {
  const std::string& file = plan.source_file;
  const std::optional<plan::MoeSpec>& moe = plan.model.moe;
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const plan::Stage& s = plan.stages[i];
    const std::string at = "stages[" + std::to_string(i) + "].";
    if (s.ep < 1)
      throw Error(file, at + "ep", "an expert-parallel degree >= 1, got " + std::to_string(s.ep));
    if (!moe) {
      if (s.ep > 1)
        throw Error(file, at + "ep", "ep 1 for a dense model, got " + std::to_string(s.ep),
                    "give the model a moe: section, or drop ep");
      continue;
    }
    // The folded layout (expert_tp < tp) splits each tensor group's tokens into tp / expert_tp
    // slices, one per expert-tp group inside it; above tp an expert-tp group spans whole tensor
    // groups, which gather each other's rows (moe_layer.h): expert_tp must divide tp or be a
    // multiple of it.
    const int etp = s.expert_tp_degree();
    if (s.mixed_tp() || (s.tp % etp != 0 && etp % s.tp != 0))
      throw Error(file, at + "expert_tp",
                  "an expert_tp dividing the stage's tp (" + std::to_string(s.tp) +
                      ") or a multiple of it, on replicas of one tp, for whale-run, got " +
                      std::to_string(etp),
                  "use a divisor or multiple of tp, or leave it out (the stage's tp); whale-sim "
                  "models the other layouts");
    const int devices = static_cast<int>(s.devices.size());
    if (devices % (s.ep * etp) != 0 || (s.expert_counts.empty() && moe->experts % s.ep != 0))
      throw Error(file, at + "ep",
                  "an ep dividing the stage's devices over expert_tp (" +
                      std::to_string(devices / etp) + ") and the " +
                      std::to_string(moe->experts) + " experts, got " + std::to_string(s.ep));
  }
}

}  // namespace whale::exec

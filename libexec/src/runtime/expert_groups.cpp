// File: expert_groups.cpp
// validate_expert_layout and make_expert_groups.
#include "runtime/expert_groups.h"

#include <string>
#include <vector>

#include "whale/plan/error.h"

namespace whale::exec {

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
    if (s.expert_tp != 0 && s.expert_tp != s.tp)
      throw Error(file, at + "expert_tp",
                  "the stage's tp (" + std::to_string(s.tp) + ") for whale-run, got " +
                      std::to_string(s.expert_tp),
                  "leave expert_tp out (whale-run splits the experts like attention); whale-sim "
                  "models the folded layouts");
    if (s.tp > 1 && s.sequence_parallel)
      throw Error(file, at + "sequence_parallel",
                  "no sequence parallelism with tp " + std::to_string(s.tp) +
                      " in a stage of a mixture-of-experts model for whale-run",
                  "set sequence_parallel false");
    if (s.dp() % s.ep != 0 || (s.expert_counts.empty() && moe->experts % s.ep != 0))
      throw Error(file, at + "ep",
                  "an ep dividing the stage's dp " + std::to_string(s.dp()) + " and the " +
                      std::to_string(moe->experts) + " experts, got " + std::to_string(s.ep));
    if (s.ep > 1 && (s.shard_optimizer || s.shard_gradients))
      throw Error(file, at + (s.shard_optimizer ? "shard_optimizer" : "shard_gradients"),
                  "no ZeRO sharding with expert parallelism in whale-run (ep " +
                      std::to_string(s.ep) + ")",
                  "set shard_optimizer and shard_gradients false, or use ep 1");
  }
}

ExpertGroups make_expert_groups(Communicator& dp, int ep) {
  const int replica = dp.rank(), replicas = dp.size();
  std::vector<int> ep_members, expert_dp_members;
  for (int r = replica / ep * ep; r < replica / ep * ep + ep; ++r) ep_members.push_back(r);
  for (int r = replica % ep; r < replicas; r += ep) expert_dp_members.push_back(r);
  ExpertGroups groups;
  groups.ep = dp.subgroup(ep_members);
  if (expert_dp_members.size() > 1) groups.expert_dp = dp.subgroup(expert_dp_members);
  return groups;
}

}  // namespace whale::exec

// File: expert_groups.h
// Private: the expert parallelism of whale-run's stages: which layouts it runs, and the two
// groups of a replica (its expert-parallel group, and the replicas holding its experts).
#pragma once

#include <memory>

#include "whale/exec/comm/communicator.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// Throws whale::Error naming the plan file and `stages[i].ep` (or tp, expert_tp,
/// shard_optimizer, shard_gradients) for an expert layout whale-run cannot run: ep < 1; ep > 1
/// in a dense model; ep not dividing the stage's dp or the experts; a mixture-of-experts stage
/// with tp > 1 or an expert_tp other than its tp; ep > 1 with ZeRO (its shards would mix
/// experts of different members).
void validate_expert_layout(const plan::Plan& plan);

/// The expert groups of replica `replica` of a stage with ep > 1 (tp 1): ep = the ep
/// consecutive replicas [replica / ep * ep, +ep) (new rank = replica % ep); expert_dp = the
/// replicas with the same replica % ep (null when that is this one alone).
struct ExpertGroups {
  std::unique_ptr<Communicator> ep, expert_dp;
};
/// Made from the stage's data-parallel group `dp` (rank = replica); every replica calls it
/// together, each creating its ep group then its expert_dp group.
ExpertGroups make_expert_groups(Communicator& dp, int ep);

}  // namespace whale::exec

// File: comm_groups.h
// Which communicators a plan needs and who is in each: tensor groups, data-parallel groups,
// and the rank pairs of pipeline neighbours and of bridges between stages of different shapes.
// A pure function of the plan and its RankLayout, shared by the MPI and the NCCL paths.
#pragma once

#include <vector>

#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/plan.h"

namespace whale::exec {

enum class GroupRole {
  tensor,    // the tp ranks of one replica of a stage
  data,      // one tp rank of a stage across its dp replicas
  pipeline,  // two ranks at a boundary between stages of the same shape (dp, tp, shares)
  bridge,    // two ranks at a boundary between stages of different shapes
};
/// "tensor", "data", "pipeline", "bridge".
const char* to_string(GroupRole role);

struct CommGroup {
  GroupRole role = GroupRole::tensor;
  /// tensor, data: the stage. pipeline, bridge: the sending stage s of the boundary s -> s+1.
  int stage = 0;
  /// World ranks. tensor: in tp-rank order; data: in replica order; pipeline, bridge: the two
  /// ranks ascending (one communicator carries activations one way and gradients the other).
  std::vector<int> ranks;
};

/// Every communicator of `plan`, in the one global order in which every rank must create the
/// ones it belongs to (so that creation, collective over the members, cannot deadlock): per
/// stage its tensor groups (replica order) then its data groups (tp order), then the pairs of
/// the boundary after it (forward activation pairs, then backward gradient pairs, as the
/// executor sends them). Groups of one rank are left out; a rank list that already appeared
/// is left out too (it shares the first group's communicator). Boundaries between stages on
/// the same device group pass data in memory and need no pair.
std::vector<CommGroup> plan_comm_groups(const plan::Plan& plan, const RankLayout& layout);

/// The groups of `groups` that `rank` is a member of, in their order.
std::vector<CommGroup> groups_of_rank(const std::vector<CommGroup>& groups, int rank);

}  // namespace whale::exec

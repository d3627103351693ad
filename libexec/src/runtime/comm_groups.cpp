// File: comm_groups.cpp
// plan_comm_groups: tensor and data groups per stage and the rank pairs of each boundary,
// derived from the same bridge rules (plan::bridge_transfers) that the executor sends by.
#include "whale/exec/runtime/comm_groups.h"

#include <algorithm>
#include <set>

#include "whale/plan/bridge.h"

namespace whale::exec {
namespace {

bool same_shape(const plan::Stage& a, const plan::Stage& b) {
  return a.dp() == b.dp() && a.tp == b.tp && a.replica_tps == b.replica_tps &&
         a.shares == b.shares;
}

/// Appends `group` unless it has fewer than two ranks or its rank list appeared before.
void add_group(CommGroup group, std::set<std::vector<int>>* seen, std::vector<CommGroup>* out) {
  if (group.ranks.size() < 2 || !seen->insert(group.ranks).second) return;
  out->push_back(std::move(group));
}

/// The (sender, receiver) device pairs of the boundary from -> to: activations go from
/// bridge_source_device to every tp rank of the receiving replica; the gradient of tp rank t
/// of a sending replica comes from tp rank t % (its tp) of the receiving replica.
std::vector<std::pair<int, int>> boundary_device_pairs(const plan::Stage& from,
                                                       const plan::Stage& to) {
  std::vector<std::pair<int, int>> pairs;
  const std::vector<plan::BridgeTransfer> transfers = plan::bridge_transfers(from, to);
  for (const plan::BridgeTransfer& t : transfers) {
    const std::vector<int> receivers = to.replica_devices(t.to_replica);
    for (int to_tp = 0; to_tp < to.replica_tp(t.to_replica); ++to_tp)
      pairs.emplace_back(plan::bridge_source_device(from, t.from_replica, to_tp),
                         receivers[to_tp]);
  }
  for (const plan::BridgeTransfer& t : transfers) {
    const std::vector<int> senders = from.replica_devices(t.from_replica);
    const std::vector<int> receivers = to.replica_devices(t.to_replica);
    for (int from_tp = 0; from_tp < from.replica_tp(t.from_replica); ++from_tp)
      pairs.emplace_back(receivers[from_tp % to.replica_tp(t.to_replica)], senders[from_tp]);
  }
  return pairs;
}

}  // namespace

const char* to_string(GroupRole role) {
  switch (role) {
    case GroupRole::tensor: return "tensor";
    case GroupRole::data: return "data";
    case GroupRole::pipeline: return "pipeline";
    case GroupRole::bridge: return "bridge";
  }
  return "?";
}

std::vector<CommGroup> plan_comm_groups(const plan::Plan& plan, const RankLayout& layout) {
  std::vector<CommGroup> groups;
  std::set<std::vector<int>> seen;
  const int stages = static_cast<int>(plan.stages.size());
  for (int s = 0; s < stages; ++s) {
    const plan::Stage& stage = plan.stages[s];
    for (int r = 0; r < stage.dp(); ++r)
      add_group(CommGroup{GroupRole::tensor, s, layout.tp_group(s, r)}, &seen, &groups);
    for (int t = 0; t < stage.tp; ++t)
      add_group(CommGroup{GroupRole::data, s, layout.dp_group(s, t)}, &seen, &groups);
    if (stage.mixed_tp() && stage.dp() > 1)  // its replicated parameters (mixed_tp_packing.h)
      add_group(CommGroup{GroupRole::data, s, layout.stage_ranks(s)}, &seen, &groups);
    if (s + 1 == stages || plan.group_of_stage(s) == plan.group_of_stage(s + 1)) continue;
    const plan::Stage& next = plan.stages[s + 1];
    const GroupRole role = same_shape(stage, next) ? GroupRole::pipeline : GroupRole::bridge;
    for (const auto& [sender, receiver] : boundary_device_pairs(stage, next)) {
      std::vector<int> pair = {layout.rank_of_device(sender), layout.rank_of_device(receiver)};
      std::sort(pair.begin(), pair.end());
      add_group(CommGroup{role, s, pair}, &seen, &groups);
    }
  }
  return groups;
}

std::vector<CommGroup> groups_of_rank(const std::vector<CommGroup>& groups, int rank) {
  std::vector<CommGroup> mine;
  for (const CommGroup& g : groups)
    if (std::find(g.ranks.begin(), g.ranks.end(), rank) != g.ranks.end()) mine.push_back(g);
  return mine;
}

}  // namespace whale::exec

// File: rank_communicators.cpp
// rank_groups: this rank's tensor, data and tied-embedding groups with their transports; the
// world's factory that builds them over MPI_COMM_WORLD.
#include "whale/exec/runtime/rank_communicators.h"

#include <mpi.h>

#include <algorithm>

#include "runtime/expert_groups.h"
#include "runtime/tied_embedding.h"
#include "whale/exec/comm/group_communicator.h"
#include "whale/exec/runtime/comm_groups.h"

namespace whale::exec {
namespace {

TransportKind transport_of(const std::vector<DeviceKind>& kinds, const std::vector<int>& ranks) {
  std::vector<DeviceKind> members;
  for (int r : ranks) members.push_back(kinds.at(r));
  return choose_transport(members);
}

class WorldGroupFactory : public GroupCommunicatorFactory {
 public:
  WorldGroupFactory(int gpu, void* compute_stream) : gpu_(gpu), compute_stream_(compute_stream) {}
  std::unique_ptr<Communicator> make(const RankGroup& group) override {
    return make_group_communicator(MPI_COMM_WORLD, group.ranks, group.transport, gpu_,
                                   compute_stream_);
  }

 private:
  int gpu_;
  void* compute_stream_;
};

}  // namespace

const char* to_string(GroupPurpose purpose) {
  switch (purpose) {
    case GroupPurpose::tensor: return "tensor";
    case GroupPurpose::data: return "data";
    case GroupPurpose::tied_embedding: return "tied-embedding";
    case GroupPurpose::expert_parallel: return "expert-parallel";
    case GroupPurpose::expert_data: return "expert-data";
    case GroupPurpose::expert_token_gather: return "expert-token-gather";
  }
  return "?";
}

std::vector<DeviceKind> rank_device_kinds(const plan::Plan& plan, const RankLayout& layout,
                                          bool cpu_device) {
  std::vector<DeviceKind> kinds;
  for (int r = 0; r < layout.world_size(); ++r)
    kinds.push_back(cpu_device ? DeviceKind::cpu
                               : device_kind_from_profile(
                                     plan.cluster.profile_of(layout.device_of_rank(r)).kind));
  return kinds;
}

std::vector<RankGroup> rank_groups(const plan::Plan& plan, const RankLayout& layout,
                                   const std::vector<DeviceKind>& kinds, int rank) {
  std::vector<RankGroup> groups;
  for (const CommGroup& g : groups_of_rank(plan_comm_groups(plan, layout), rank)) {
    if (g.role != GroupRole::tensor && g.role != GroupRole::data) continue;
    const GroupPurpose purpose =
        g.role == GroupRole::tensor ? GroupPurpose::tensor : GroupPurpose::data;
    groups.push_back(RankGroup{purpose, g.stage, g.ranks, transport_of(kinds, g.ranks)});
  }
  // The tied token table's group, of the ranks that hold one copy each (the stages on different
  // device groups); a rank of both stages adds its two copies itself.
  const std::vector<int> tied_stages = tied_embedding_stages(plan);
  const auto holds = [&](int s) {
    const std::vector<int> ranks = ranks_of_stages(plan, layout, {s});
    return std::binary_search(ranks.begin(), ranks.end(), rank);
  };
  if (!tied_stages.empty() && holds(tied_stages.front()) != holds(tied_stages.back())) {
    const std::vector<int> tied_ranks = tied_group_ranks(plan, layout, rank);
    groups.push_back(RankGroup{GroupPurpose::tied_embedding, tied_stages.front(), tied_ranks,
                               transport_of(kinds, tied_ranks)});
  }
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s)
    for (RankGroup& g : expert_layout_groups(plan, layout, kinds, s, rank))
      groups.push_back(std::move(g));
  return groups;
}

std::vector<RankGroup> expert_layout_groups(const plan::Plan& plan, const RankLayout& layout,
                                            const std::vector<DeviceKind>& kinds, int s,
                                            int rank) {
  const plan::Stage& stage = plan.stages.at(s);
  std::vector<RankGroup> groups;
  if (!plan.model.moe || !separate_expert_layout(stage)) return groups;
  const int etp = stage.expert_tp_degree();
  const int device = layout.device_of_rank(rank);
  if (!stage.holds(device)) return groups;
  const int index = stage.index_of(device);
  const int replica = index / (stage.ep * etp), tp_rank = index % etp;
  auto add = [&](GroupPurpose purpose, const std::vector<int>& devices) {
    if (devices.size() < 2) return;
    std::vector<int> ranks;
    for (int device : devices) ranks.push_back(layout.rank_of_device(device));
    groups.push_back(RankGroup{purpose, s, ranks, transport_of(kinds, ranks)});
  };
  add(GroupPurpose::expert_parallel, stage.expert_parallel_group(replica, tp_rank));
  add(GroupPurpose::expert_data, stage.expert_data_parallel_group(stage.ep_rank_of(index), tp_rank));
  if (etp > stage.tp)
    add(GroupPurpose::expert_token_gather,
        stage.expert_token_gather_group(replica, stage.ep_rank_of(index), index % stage.tp));
  return groups;
}

std::unique_ptr<GroupCommunicatorFactory> make_world_group_factory(int gpu, void* compute_stream) {
  return std::make_unique<WorldGroupFactory>(gpu, compute_stream);
}

}  // namespace whale::exec

// File: rank_layout.cpp
// RankLayout: ranks in ascending device-id order; per-rank stage roles and group members.
#include "whale/exec/runtime/rank_layout.h"

#include <algorithm>
#include <string>

#include "whale/plan/error.h"
#include "whale/plan/launch.h"

namespace whale::exec {

RankLayout::RankLayout(const plan::Plan& plan) : plan_(&plan) {
  devices_ = plan::plan_rank_devices(plan);
  groups_.assign(devices_.size(), -1);
  roles_.resize(devices_.size());
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const plan::Stage& stage = plan.stages[s];
    for (int r = 0; r < stage.replicas(); ++r) {
      const std::vector<int> replica = stage.replica_devices(r);
      for (int t = 0; t < static_cast<int>(replica.size()); ++t) {
        const int rank = rank_of_device(replica[t]);
        groups_[rank] = plan.group_of_stage(s);
        roles_[rank].push_back(StageRole{s, r, t});
      }
    }
  }
}

int RankLayout::rank_of_device(int device) const {
  auto it = std::lower_bound(devices_.begin(), devices_.end(), device);
  if (it == devices_.end() || *it != device) return -1;
  return static_cast<int>(it - devices_.begin());
}

std::vector<int> RankLayout::tp_group(int stage, int replica) const {
  std::vector<int> ranks;
  for (int device : plan_->stages.at(stage).replica_devices(replica))
    ranks.push_back(rank_of_device(device));
  return ranks;
}

std::vector<int> RankLayout::dp_group(int stage, int piece) const {
  std::vector<int> ranks;
  for (int device : plan_->stages.at(stage).piece_holders(piece)) ranks.push_back(rank_of_device(device));
  return ranks;
}

std::vector<int> RankLayout::stage_ranks(int stage) const {
  std::vector<int> ranks;
  for (int device : plan_->stages.at(stage).devices) ranks.push_back(rank_of_device(device));
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

void RankLayout::check_world_size(int mpi_world_size) const {
  if (mpi_world_size == world_size()) return;
  throw Error(plan_->source_file, "stages",
              "the plan uses " + std::to_string(world_size()) + " devices but MPI runs " +
                  std::to_string(mpi_world_size) + " ranks",
              "run `mpirun -np " + std::to_string(world_size()) + " whale-run ...`");
}

}  // namespace whale::exec

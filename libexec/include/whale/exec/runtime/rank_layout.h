// File: rank_layout.h
// RankLayout: which MPI rank runs which device of a plan, and which (stage, replica, tp rank)
// roles that device plays. Rank r is the r-th device id, in ascending order, the plan uses.
#pragma once

#include <vector>

#include "whale/plan/plan.h"

namespace whale::exec {

/// One stage a device runs: its replica and tensor-parallel rank there.
struct StageRole {
  int stage = 0;
  int replica = 0;
  int tp_rank = 0;
};

class RankLayout {
 public:
  /// Builds the mapping for a validated plan.
  explicit RankLayout(const plan::Plan& plan);

  /// Ranks the plan needs: the number of distinct device ids its stages use.
  int world_size() const { return static_cast<int>(devices_.size()); }
  /// The device id of `rank`.
  int device_of_rank(int rank) const { return devices_.at(rank); }
  /// The rank of device `device`, or -1 when the plan does not use it.
  int rank_of_device(int device) const;
  /// The device group (0..p-1) `rank` belongs to.
  int group_of_rank(int rank) const { return groups_.at(rank); }
  /// The stages `rank` runs, ascending, with its replica and tp rank in each.
  const std::vector<StageRole>& roles(int rank) const { return roles_.at(rank); }
  /// The ranks of replica `replica` of `stage`, in tp-rank order (its tensor group).
  std::vector<int> tp_group(int stage, int replica) const;
  /// The ranks holding finest shard `piece` (0 .. tp - 1) of `stage` across its replicas, in
  /// replica order (plan::Stage::piece_holders): without replica_tp, tp rank `piece` of every
  /// replica, its data-parallel group.
  std::vector<int> dp_group(int stage, int piece) const;
  /// Every rank of `stage`, ascending: a mixed-tp stage sums its replicated parameters'
  /// gradients over them.
  std::vector<int> stage_ranks(int stage) const;

  /// Throws whale::Error naming the plan file when `mpi_world_size` differs from world_size().
  void check_world_size(int mpi_world_size) const;

 private:
  const plan::Plan* plan_;
  std::vector<int> devices_;                  // rank -> device id, ascending
  std::vector<int> groups_;                   // rank -> group
  std::vector<std::vector<StageRole>> roles_; // rank -> stage roles
};

}  // namespace whale::exec

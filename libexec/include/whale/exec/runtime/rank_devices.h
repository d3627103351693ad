// File: rank_devices.h
// What each rank of a plan runs on: its device kind, the GPU it drives on its host, and the
// transport of each communicator group; and this rank's communicators built from them.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "whale/exec/comm/communicator.h"
#include "whale/exec/comm/transport_choice.h"
#include "whale/exec/runtime/comm_groups.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// The kind (cpu or gpu) of the profile of `rank`'s plan device.
DeviceKind device_kind_of_rank(const plan::Plan& plan, const RankLayout& layout, int rank);

/// The transport of a group of world ranks: choose_transport of its members' device kinds.
TransportKind transport_of_group(const plan::Plan& plan, const RankLayout& layout,
                                 const std::vector<int>& ranks);

/// The CUDA ordinal each rank drives, indexed by rank: the cluster's local index of its plan
/// device (Device::local_index) for a GPU rank, -1 for a CPU rank. `host_of_rank[r]` is equal
/// for ranks on one machine (host_ids of the placement reports). `gpus_per_host` is the CUDA device count of
/// the machines, or -1 when unknown (not checked).
/// NCCL cannot put two ranks on one GPU: throws whale::Error (the plan file, "stages") naming
/// both ranks, their plan devices and the GPU when two GPU ranks on one machine get the same
/// ordinal, and when an ordinal is not below `gpus_per_host`.
std::vector<int> assign_local_gpus(const plan::Plan& plan, const RankLayout& layout,
                                   const std::vector<int>& host_of_rank, int gpus_per_host);

/// This rank's communicators: every group of plan_comm_groups that `rank` is in, created in
/// their global order over MPI_COMM_WORLD with transport_of_group and the rank's GPU from
/// `local_gpus` (assign_local_gpus); keyed by the group's rank list. Collective over each
/// group's members; MPI must be initialised.
std::map<std::vector<int>, std::unique_ptr<Communicator>> make_plan_communicators(
    const plan::Plan& plan, const RankLayout& layout, int rank,
    const std::vector<int>& local_gpus);

}  // namespace whale::exec

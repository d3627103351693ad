// File: rank_devices.cpp
// Device kinds, the local GPU of each rank (one rank per GPU), group transports, and this
// rank's communicators over them.
#include "whale/exec/runtime/rank_devices.h"

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "whale/exec/comm/group_communicator.h"
#include "whale/plan/error.h"

namespace whale::exec {

DeviceKind device_kind_of_rank(const plan::Plan& plan, const RankLayout& layout, int rank) {
  return device_kind_from_profile(plan.cluster.profile_of(layout.device_of_rank(rank)).kind);
}

TransportKind transport_of_group(const plan::Plan& plan, const RankLayout& layout,
                                 const std::vector<int>& ranks) {
  std::vector<DeviceKind> kinds;
  for (int rank : ranks) kinds.push_back(device_kind_of_rank(plan, layout, rank));
  return choose_transport(kinds);
}

std::vector<int> assign_local_gpus(const plan::Plan& plan, const RankLayout& layout,
                                   const std::vector<int>& host_of_rank, int gpus_per_host) {
  const int ranks = layout.world_size();
  if (static_cast<int>(host_of_rank.size()) != ranks)
    throw std::invalid_argument("assign_local_gpus: " + std::to_string(host_of_rank.size()) +
                                " host ids for " + std::to_string(ranks) + " ranks");
  std::vector<int> gpus(ranks, -1);
  std::map<std::pair<int, int>, int> user;  // (host, gpu) -> the first rank that drives it
  for (int r = 0; r < ranks; ++r) {
    if (device_kind_of_rank(plan, layout, r) != DeviceKind::gpu) continue;
    const int device = layout.device_of_rank(r);
    gpus[r] = plan.cluster.devices.at(device).local_index;
    const std::string gpu = "GPU " + std::to_string(gpus[r]);
    if (gpus_per_host >= 0 && gpus[r] >= gpus_per_host)
      throw Error(plan.source_file, "stages",
                  "rank " + std::to_string(r) + " (plan device " + std::to_string(device) +
                      ") to drive " + gpu + ", but its host has " +
                      std::to_string(gpus_per_host) + " GPU(s)",
                  "run on machines shaped like the cluster file's nodes");
    const auto [it, fresh] = user.emplace(std::make_pair(host_of_rank[r], gpus[r]), r);
    if (fresh) continue;
    const int other = it->second;
    throw Error(plan.source_file, "stages",
                "one rank per GPU, but ranks " + std::to_string(other) + " and " +
                    std::to_string(r) + " (plan devices " +
                    std::to_string(layout.device_of_rank(other)) + " and " +
                    std::to_string(device) + ") both use " + gpu + " of one host",
                "NCCL cannot put two ranks on one GPU: launch one host per cluster node "
                "(mpirun --host/--map-by node), or give each device its own GPU in the "
                "cluster file");
  }
  return gpus;
}

std::map<std::vector<int>, std::unique_ptr<Communicator>> make_plan_communicators(
    const plan::Plan& plan, const RankLayout& layout, int rank,
    const std::vector<int>& local_gpus) {
  std::map<std::vector<int>, std::unique_ptr<Communicator>> comms;
  for (const CommGroup& g : groups_of_rank(plan_comm_groups(plan, layout), rank))
    comms[g.ranks] = make_group_communicator(
        MPI_COMM_WORLD, g.ranks, transport_of_group(plan, layout, g.ranks), local_gpus.at(rank));
  return comms;
}

}  // namespace whale::exec

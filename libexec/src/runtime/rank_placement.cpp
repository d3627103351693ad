// File: rank_placement.cpp
// The placement check: the ranks' reported hosts and GPUs against the plan's cluster nodes,
// device indices and device models; the first misplaced rank gives one error.
#include "whale/exec/runtime/rank_placement.h"

#include <map>
#include <stdexcept>

#include "whale/exec/runtime/rank_devices.h"
#include "whale/plan/device_name.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

const char* kLaunchHint =
    "one host per cluster node, its ranks consecutive: launch with the files of whale-plan "
    "--export-launch (docs/run.md, \"Running across machines\")";

struct Placement {
  const plan::Plan& plan;
  const RankLayout& layout;
  const std::vector<RankReport>& reports;
  std::vector<int> local;

  const plan::Device& device(int rank) const { return plan.cluster.devices.at(layout.device_of_rank(rank)); }
  const std::string& node(int rank) const { return plan.cluster.nodes.at(device(rank).node).name; }
  bool gpu(int rank) const { return device_kind_of_rank(plan, layout, rank) == DeviceKind::gpu; }
  std::string who(int rank) const {
    return "rank " + std::to_string(rank) + " on host " + reports[rank].host;
  }
  std::string what_gpu(int rank) const {
    const plan::Device& d = device(rank);
    return "GPU " + std::to_string(d.local_index) + " as " + d.model + " (plan device " +
           std::to_string(d.id) + ", cluster node " + node(rank) + ")";
  }
  [[noreturn]] void fail(int rank, const std::string& expected, const std::string& hint) const {
    throw Error(plan.source_file, who(rank) + " (local rank " + std::to_string(local[rank]) + ")",
                expected, hint);
  }

  void check_hosts(int rank, bool check_gpus, std::map<std::string, int>& first_of_node,
                   std::map<std::string, int>& first_gpu_on_host) const {
    const auto [node_first, new_node] = first_of_node.emplace(node(rank), rank);
    const int mate = node_first->second;
    if (!new_node && reports[mate].host != reports[rank].host)
      fail(rank, "the host of cluster node " + node(rank) + ", " + reports[mate].host +
                     ", where its rank " + std::to_string(mate) + " runs", kLaunchHint);
    if (!check_gpus || !gpu(rank)) return;
    const auto [host_first, new_host] = first_gpu_on_host.emplace(reports[rank].host, rank);
    const int other = host_first->second;
    if (!new_host && node(other) != node(rank))
      fail(rank, "a host of its own for the GPUs of cluster node " + node(rank) + ", but GPU rank " +
                     std::to_string(other) + " of node " + node(other) +
                     " runs there too, and their GPU indices would collide", kLaunchHint);
  }

  void check_gpu(int rank, DeviceCheck check) const {
    const RankReport& report = reports[rank];
    const int index = device(rank).local_index;
    if (report.gpus.empty())
      fail(rank, what_gpu(rank) + ", but the host shows no GPU" +
                     (report.cpu.empty() ? "" : " (CPU: " + report.cpu + ")"),
           "run the rank on a host with the plan's GPUs, or whale-run --device cpu to run every "
           "rank on a CPU backend");
    if (index >= static_cast<int>(report.gpus.size()))
      fail(rank, what_gpu(rank) + ", but the rank sees " + std::to_string(report.gpus.size()) +
                     " GPU(s)",
           "let every rank see all GPUs of its node: leave CUDA_VISIBLE_DEVICES unset, srun "
           "--gpu-bind=none");
    const std::string& name = report.gpus[index];
    if (check == DeviceCheck::model && !plan::device_name_matches(name, device(rank).model))
      fail(rank, what_gpu(rank) + ", got \"" + name + "\"",
           "start the ranks on the hosts of the plan's nodes, or whale-run --device gpu to run on "
           "whatever GPUs the hosts have");
  }
};

}  // namespace

std::vector<int> local_ranks(const std::vector<RankReport>& reports) {
  std::map<std::string, int> seen;
  std::vector<int> local;
  for (const RankReport& r : reports) local.push_back(seen[r.host]++);
  return local;
}

void check_rank_placement(const plan::Plan& plan, const RankLayout& layout,
                          const std::vector<RankReport>& reports, DeviceCheck check) {
  if (static_cast<int>(reports.size()) != layout.world_size())
    throw std::invalid_argument("check_rank_placement: " + std::to_string(reports.size()) +
                                " reports for " + std::to_string(layout.world_size()) + " ranks");
  const Placement placement{plan, layout, reports, local_ranks(reports)};
  std::map<std::string, int> first_of_node, first_gpu_on_host;
  for (int rank = 0; rank < layout.world_size(); ++rank) {
    placement.check_hosts(rank, check != DeviceCheck::none, first_of_node, first_gpu_on_host);
    if (check != DeviceCheck::none && placement.gpu(rank)) placement.check_gpu(rank, check);
  }
}

}  // namespace whale::exec

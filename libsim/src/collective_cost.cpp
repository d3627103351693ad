// File: collective_cost.cpp
// Alpha-beta ring collectives, the hierarchical reduce-scatter, all-gather and all-reduce across
// nodes, and point-to-point.
#include "whale/sim/collective_cost.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "whale/plan/node_members.h"
#include "whale/sim/link_calibration.h"

namespace whale::sim {
Seconds ring_allreduce_s(Bytes bytes, int ranks, const plan::Link& link) {
  return 2.0 * ring_reduce_scatter_s(bytes, ranks, link);
}

plan::Link device_network_share(const plan::Cluster& cluster, int node) {
  const plan::Node& n = cluster.nodes.at(node);
  return n.per_device_share(calibrated_link(cluster, node, n.network));
}

Seconds reduce_scatter_s(const plan::Cluster& cluster, const std::vector<int>& devices,
                         Bytes bytes) {
  if (devices.size() <= 1 || bytes <= 0) return 0;
  const std::vector<std::pair<int, int>> members = plan::members_per_node(cluster, devices);
  int local_ranks = 0;
  plan::Link intra, network;
  bool first = true;
  for (const auto& [node, held] : members) {
    local_ranks = std::max(local_ranks, held);
    const plan::Link node_intra = calibrated_intra_link(cluster, node);
    const plan::Link node_share = device_network_share(cluster, node);
    intra = first ? node_intra : plan::slowest(intra, node_intra);
    network = first ? node_share : plan::slowest(network, node_share);
    first = false;
  }
  const int nodes = static_cast<int>(members.size());
  if (nodes == 1) return ring_reduce_scatter_s(bytes, local_ranks, intra);
  return ring_reduce_scatter_s(bytes, local_ranks, intra) +
         ring_reduce_scatter_s(bytes / local_ranks, nodes, network);
}

Seconds all_to_all_s(const plan::Cluster& cluster, const std::vector<int>& devices, Bytes bytes) {
  const int n = static_cast<int>(devices.size());
  if (n <= 1 || bytes <= 0) return 0;
  const std::vector<std::pair<int, int>> members = plan::members_per_node(cluster, devices);
  Seconds slowest_s = 0;
  for (const auto& [node, held] : members) {
    // Of its bytes a device keeps 1/n, sends (held - 1)/n to its own node's members and
    // the rest over its network share; both links run at once, each message paying latency.
    const plan::Link intra = calibrated_intra_link(cluster, node);
    const plan::Link share = device_network_share(cluster, node);
    const Seconds intra_s = (held - 1) * (bytes / n / intra.bandwidth_bytes_per_s + intra.latency_s);
    const int remote = n - held;
    const Seconds network_s = remote * (bytes / n / share.bandwidth_bytes_per_s + share.latency_s);
    slowest_s = std::max(slowest_s, std::max(intra_s, network_s));
  }
  return slowest_s;
}

Seconds all_gather_s(const plan::Cluster& cluster, const std::vector<int>& devices, Bytes bytes) {
  // A ring all-gather moves what a ring reduce-scatter moves, in the other direction.
  return reduce_scatter_s(cluster, devices, bytes);
}

Seconds allreduce_s(const plan::Cluster& cluster, const std::vector<int>& devices, Bytes bytes) {
  // Hierarchical all-reduce = intra reduce-scatter, inter all-reduce (= inter reduce-scatter +
  // inter all-gather) of bytes/k, intra all-gather: a reduce-scatter then an all-gather.
  return reduce_scatter_s(cluster, devices, bytes) + all_gather_s(cluster, devices, bytes);
}

Seconds p2p_s(const plan::Cluster& cluster, int from_device, int to_device, Bytes bytes) {
  if (from_device == to_device || bytes <= 0) return 0;
  return calibrated_link_between(cluster, from_device, to_device).time_for(bytes);
}

Seconds concurrent_p2p_s(const plan::Cluster& cluster, int from_device, int to_device, Bytes bytes) {
  if (from_device == to_device || bytes <= 0) return 0;
  const int from_node = cluster.devices.at(from_device).node;
  const int to_node = cluster.devices.at(to_device).node;
  if (from_node == to_node) return calibrated_intra_link(cluster, from_node).time_for(bytes);
  return plan::slowest(device_network_share(cluster, from_node), device_network_share(cluster, to_node))
      .time_for(bytes);
}

}  // namespace whale::sim

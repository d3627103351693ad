// File: data_parallel_ring.cpp
// DataParallelRing (data_parallel_ring.h).
#include "whale/plan/data_parallel_ring.h"

#include <algorithm>
#include <map>

namespace whale::plan {

Seconds DataParallelRing::allreduce_s(Bytes bytes) const {
  if (bytes <= 0) return 0.0;
  return 2.0 * (ring_reduce_scatter_s(bytes, local, intra) +
               (nodes > 1 ? ring_reduce_scatter_s(bytes / local, nodes, network) : 0.0));
}

Seconds DataParallelRing::latency_s() const {
  return 2.0 * ((local - 1) * intra.latency_s + (nodes > 1 ? (nodes - 1) * network.latency_s : 0.0));
}

DataParallelRing data_parallel_ring(const Cluster& cluster, const std::vector<int>& devices, int tp) {
  std::map<int, int> replicas_per_node;
  for (std::size_t first = 0; first < devices.size(); first += static_cast<std::size_t>(tp))
    ++replicas_per_node[cluster.devices.at(devices[first]).node];
  DataParallelRing ring;
  bool seen = false;
  for (const auto& [node, replicas] : replicas_per_node) {
    const Node& n = cluster.nodes.at(node);
    const Link share = n.per_device_share(n.network);
    ring.local = std::max(ring.local, replicas);
    ring.intra = seen ? slowest(ring.intra, n.intra_link) : n.intra_link;
    ring.network = seen ? slowest(ring.network, share) : share;
    seen = true;
  }
  ring.nodes = static_cast<int>(replicas_per_node.size());
  return ring;
}

}  // namespace whale::plan

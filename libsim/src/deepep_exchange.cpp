// File: deepep_exchange.cpp
// DeepEP's deduplicated dispatch and combine over the cluster's links (deepep_exchange.h).
#include "whale/sim/deepep_exchange.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "whale/sim/collective_cost.h"
#include "whale/sim/link_calibration.h"

namespace whale::sim {

double expert_reach_probability(int experts, int top_k, int held) {
  if (held <= 0) return 0;
  // C(experts - held, k) / C(experts, k) = prod_{i < k} (experts - held - i) / (experts - i).
  double none = 1;
  for (int i = 0; i < top_k; ++i) {
    const double left = experts - held - i;
    if (left <= 0) return 1;
    none *= left / (experts - i);
  }
  return 1 - none;
}

Seconds deepep_exchange_s(const plan::Cluster& cluster, const std::vector<int>& devices,
                          const std::vector<int>& expert_counts, int top_k, Bytes token_copy_bytes) {
  const int n = static_cast<int>(devices.size());
  if (n <= 1 || token_copy_bytes <= 0) return 0;
  const int experts = std::accumulate(expert_counts.begin(), expert_counts.end(), 0);
  std::map<int, std::vector<int>> members_of_node;  // node -> member indices
  for (int i = 0; i < n; ++i) members_of_node[cluster.devices.at(devices[i]).node].push_back(i);
  std::map<int, double> node_reach;
  for (const auto& [node, members] : members_of_node) {
    int held = 0;
    for (int i : members) held += expert_counts.at(i);
    node_reach[node] = expert_reach_probability(experts, top_k, held);
  }
  const double nodes = static_cast<double>(members_of_node.size());
  Seconds slowest_s = 0;
  for (const auto& [node, members] : members_of_node) {
    const plan::Link intra = calibrated_intra_link(cluster, node);
    const plan::Link share = device_network_share(cluster, node);
    double remote_copies = 0;  // copies of each token sent over the network
    for (const auto& [other, reach] : node_reach) {
      if (other != node) remote_copies += reach;
    }
    const Seconds network_s = (nodes - 1) * share.latency_s + remote_copies * token_copy_bytes / share.bandwidth_bytes_per_s;
    for (int d : members) {
      double local_copies = 0;  // copies of each token for the other members of the node
      for (int r : members) {
        if (r != d) local_copies += expert_reach_probability(experts, top_k, expert_counts.at(r));
      }
      const Seconds intra_s = (static_cast<double>(members.size()) - 1) * intra.latency_s +
                              nodes * local_copies * token_copy_bytes / intra.bandwidth_bytes_per_s;
      slowest_s = std::max(slowest_s, std::max(intra_s, network_s));
    }
  }
  return slowest_s;
}

}  // namespace whale::sim

// File: node_members.cpp
// Counting a device set's members per node.
#include "whale/plan/node_members.h"

#include <algorithm>

namespace whale::plan {

std::vector<std::pair<int, int>> members_per_node(const Cluster& cluster, const std::vector<int>& devices) {
  std::vector<int> nodes;
  nodes.reserve(devices.size());
  for (int d : devices) nodes.push_back(cluster.devices.at(d).node);
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::pair<int, int>> out;
  for (int node : nodes) {
    if (out.empty() || out.back().first != node) out.emplace_back(node, 0);
    ++out.back().second;
  }
  return out;
}

int most_in_one_node(const Cluster& cluster, const std::vector<int>& devices) {
  int most = 0;
  for (const auto& [node, held] : members_per_node(cluster, devices)) most = std::max(most, held);
  return most;
}

}  // namespace whale::plan

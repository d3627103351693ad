// File: launch_links.cpp
// The launch of whale-profile's link measurement across cluster nodes: one rank per node.
#include <algorithm>
#include <sstream>

#include "whale/plan/error.h"
#include "whale/plan/launch.h"

namespace whale::plan {

LaunchSpec links_launch(const Cluster& cluster, const std::string& nodes, const HostMap& hosts,
                        const std::string& out_path, const std::string& option) {
  std::vector<int> indices;  // cluster node indices
  if (nodes.empty()) {
    for (int n = 0; n < static_cast<int>(cluster.nodes.size()) && n < 2; ++n) indices.push_back(n);
  } else {
    std::istringstream list(nodes);
    for (std::string name; std::getline(list, name, ',');) {
      const auto it = std::find_if(cluster.nodes.begin(), cluster.nodes.end(),
                                   [&](const Node& n) { return n.name == name; });
      if (it == cluster.nodes.end())
        throw Error("", option, "a node of cluster " + cluster.name + ", got '" + name + "'",
                    "its first node is " + cluster.nodes.front().name);
      const int index = static_cast<int>(it - cluster.nodes.begin());
      if (std::find(indices.begin(), indices.end(), index) != indices.end())
        throw Error("", option, "each node once, got " + name + " twice");
      indices.push_back(index);
    }
  }
  if (indices.size() < 2)
    throw Error("", option, "at least 2 nodes to time the links between, got " + std::to_string(indices.size()),
                "on one node, time its intra-node link with mpirun -np 2 whale-profile --links");
  std::sort(indices.begin(), indices.end());
  std::vector<int> devices;
  for (int n : indices) devices.push_back(cluster.nodes[n].device_ids.front());
  const std::string kind = cluster.profile_of(devices.front()).kind;
  for (int d : devices)
    if (cluster.profile_of(d).kind != kind)
      throw Error("", option, "nodes whose first devices are all GPUs or all CPUs, but " +
                                  cluster.nodes[indices.front()].name + " and " +
                                  cluster.nodes[cluster.devices[d].node].name + " differ",
                  "whale-profile --links runs one --device on every rank");
  LaunchSpec spec;
  spec.title = "whale-profile --links";
  spec.written_by = "whale-profile --links --export-launch";
  spec.hosts = launch_hosts(cluster, devices, hosts);
  spec.variables = {{"OUT", out_path.empty() ? "links.yaml" : out_path, "the measured link section"}};
  spec.command = {"whale-profile", "--links", "--device", kind == "gpu" ? "cuda:0" : "cpu", "--out", "$OUT"};
  return spec;
}

}  // namespace whale::plan

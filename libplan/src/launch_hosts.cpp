// File: launch_hosts.cpp
// Which host runs which ranks of a launch: the plan's ranks grouped by cluster node, the
// `--hosts` map from node names to real host names, and whale-run's launch of a plan.
#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include "whale/plan/error.h"
#include "whale/plan/launch.h"

namespace whale::plan {
namespace {

// Host names as DNS and Slurm write them (RFC 1123 letters, digits, '-', plus '.' and '_').
bool valid_host(const std::string& host) {
  if (host.empty()) return false;
  for (char c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') return false;
  return true;
}

std::string node_names(const Cluster& cluster) {
  std::string names;
  for (size_t i = 0; i < cluster.nodes.size() && i < 6; ++i) names += (i ? ", " : "") + cluster.nodes[i].name;
  return cluster.nodes.size() > 6 ? names + ", ..." : names;
}

}  // namespace

Launcher parse_launcher(const std::string& word, const std::string& option) {
  if (word == "slurm") return Launcher::slurm;
  if (word == "mpirun") return Launcher::mpirun;
  throw Error("", option, "slurm or mpirun, got '" + word + "'", "e.g. " + option + " slurm job.sh");
}

HostMap parse_host_map(const std::string& text, const Cluster& cluster, const std::string& option) {
  HostMap hosts;
  std::map<std::string, std::string> node_of_host;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string pair = text.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = pair.find('=');
    if (eq == std::string::npos)
      throw Error("", option, "NODE=HOST pairs separated by commas, got '" + pair + "'",
                  "e.g. " + option + " " + cluster.nodes.front().name + "=gpu01");
    const std::string node = pair.substr(0, eq), host = pair.substr(eq + 1);
    const bool known = std::any_of(cluster.nodes.begin(), cluster.nodes.end(),
                                   [&](const Node& n) { return n.name == node; });
    if (!known)
      throw Error("", option, "a node of cluster " + cluster.name + ", got '" + node + "'",
                  "its nodes are " + node_names(cluster));
    if (!valid_host(host))
      throw Error("", option, "a host name (letters, digits, '-', '.', '_') for node " + node +
                                  ", got '" + host + "'");
    if (!hosts.emplace(node, host).second)
      throw Error("", option, "each node once, got " + node + " twice");
    const auto [it, fresh] = node_of_host.emplace(host, node);
    if (!fresh)
      throw Error("", option, "a host per node, but nodes " + it->second + " and " + node +
                                  " both map to " + host,
                  "one machine runs one cluster node's ranks");
  }
  return hosts;
}

std::vector<int> plan_rank_devices(const Plan& plan) {
  std::vector<int> devices;
  for (const Stage& stage : plan.stages) devices.insert(devices.end(), stage.devices.begin(), stage.devices.end());
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

std::vector<LaunchHost> launch_hosts(const Cluster& cluster, const std::vector<int>& rank_devices,
                                     const HostMap& hosts) {
  std::vector<LaunchHost> out;
  int last_device = -1;
  for (int rank = 0; rank < static_cast<int>(rank_devices.size()); ++rank) {
    const int device = rank_devices[rank];
    if (device <= last_device || device >= static_cast<int>(cluster.devices.size()))
      throw std::invalid_argument("launch_hosts: device " + std::to_string(device) +
                                  " out of order or outside the cluster");
    last_device = device;
    const Device& d = cluster.devices[device];
    const Node& node = cluster.nodes.at(d.node);
    if (out.empty() || out.back().node != node.name) {
      const auto mapped = hosts.find(node.name);
      const bool known = mapped != hosts.end();
      out.push_back(LaunchHost{node.name, known ? mapped->second : node.name, known, rank, 0, 0, {}});
    }
    LaunchHost& host = out.back();
    ++host.tasks;
    if (cluster.profile_of(device).kind == "gpu") host.gpus = std::max(host.gpus, d.local_index + 1);
    if (std::find(host.models.begin(), host.models.end(), d.model) == host.models.end())
      host.models.push_back(d.model);
  }
  return out;
}

LaunchSpec whale_run_launch(const Plan& plan, const std::string& plan_path, const HostMap& hosts) {
  LaunchSpec spec;
  const std::string shown = plan_path.empty() ? "plan.yaml" : plan_path;
  spec.title = "whale-run of " + shown;
  spec.written_by = "whale-plan --export-launch";
  spec.hosts = launch_hosts(plan.cluster, plan_rank_devices(plan), hosts);
  spec.variables = {{"PLAN", shown, "the plan file (whale-plan --out)"},
                    {"DATA", "", "the training data file"}};
  spec.command = {"whale-run", "$PLAN", "--data", "$DATA"};
  return spec;
}

}  // namespace whale::plan

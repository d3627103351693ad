// File: cluster.h
// Cluster: nodes, their devices (global ids 0..N-1 in file order) and the links between them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "whale/plan/device_profile.h"
#include "whale/plan/units.h"

namespace whale::plan {

/// A link: alpha-beta, time(bytes) = latency_s + bytes / bandwidth_bytes_per_s.
struct Link {
  std::string kind;                           // "nvlink", "pcie", "infiniband", "ethernet", "shm", ...
  BytesPerSecond bandwidth_bytes_per_s = 0;   // YAML: bandwidth_gbps (gigabits per second)
  Seconds latency_s = 0;                      // YAML: latency_us
  Seconds time_for(Bytes bytes) const { return latency_s + bytes / bandwidth_bytes_per_s; }
};

/// True when `a` is the slower link: lower bandwidth, or equal bandwidth and higher latency.
bool slower(const Link& a, const Link& b);

/// A link as slow as the slower of two: the lower bandwidth, with the higher latency of the two
/// (a ring over both waits for each).
Link slowest(const Link& a, const Link& b);

/// Ring reduce-scatter (or all-gather) of `bytes` over n ranks on one link:
/// (n-1)/n * bytes / bandwidth + (n-1) * latency. 0 when n <= 1 or bytes <= 0.
Seconds ring_reduce_scatter_s(Bytes bytes, int ranks, const Link& link);

struct Device {
  int id = 0;           // global id, dense, in file order
  int node = 0;         // index into Cluster::nodes
  int local_index = 0;  // index within its node
  std::string model;    // profile name
  /// What one hour of this device costs, in US dollars; YAML: price_per_hour_usd of its
  /// device entry (optional). Absent: unpriced (cost_objective.h says what needs a price).
  std::optional<double> price_per_hour_usd = std::nullopt;
};

struct Node {
  std::string name;
  Link intra_link;               // between devices of this node
  Link network;                  // this node's NIC to the rest of the cluster
  std::vector<int> device_ids;   // global ids of its devices, ascending

  /// `link` divided evenly among this node's devices (at least one): each device's share when
  /// all of them transfer over it at once, e.g. the node's network (one NIC per GPU on an
  /// H100 node). Latency and kind are kept. Both the planner (Cluster::concurrent_link_between)
  /// and the simulator (whale-sim's device_network_share) apply this one rule.
  Link per_device_share(Link link) const;
};

struct Cluster {
  std::string name;
  std::string source_file;                       // "" when built in code
  std::vector<Node> nodes;
  std::vector<Device> devices;
  std::map<std::string, DeviceProfile> profiles;  // every model that appears in devices

  const DeviceProfile& profile_of(int device_id) const;
  /// The profiles of the distinct device models among `device_ids`, in the order they first
  /// appear (one for devices of one model).
  std::vector<const DeviceProfile*> distinct_profiles(const std::vector<int>& device_ids) const;
  /// The link two distinct devices talk over: their node's intra_link when they share a node,
  /// otherwise the slower (bandwidth, then latency) of the two nodes' networks.
  Link link_between(int a, int b) const;
  /// The link two distinct devices talk over while every device of their nodes transfers at
  /// once (a pipeline stage's devices each send their part): their node's intra_link when they
  /// share a node, otherwise the slower of the two nodes' network shares (the node's network
  /// divided evenly among its devices; one NIC per GPU on an H100 node).
  Link concurrent_link_between(int a, int b) const;
  /// Distinct device model names, in order of first appearance.
  std::vector<std::string> device_models() const;
  /// Whether `width` divides the count of `device_ids` and every run of `width` consecutive
  /// devices (a tensor-parallel replica, an expert-tp group) lies inside one node.
  bool runs_inside_nodes(const std::vector<int>& device_ids, int width) const;
};

/// Loads and validates a cluster file; profiles are read from `profiles_dir`
/// (default_profiles_dir() when empty). Throws whale::Error on bad input, including an unknown
/// device model (the hint lists the available profiles).
Cluster load_cluster(const std::string& path, const std::string& profiles_dir = "");
/// Writes the cluster in the schema load_cluster reads (one node entry per node).
void save_cluster(const Cluster& cluster, const std::string& path);

}  // namespace whale::plan

// File: link_calibration.cpp
// Per-link-kind calibration applied to a node's links (link_calibration.h).
#include "whale/sim/link_calibration.h"

#include <algorithm>
#include <string>

namespace whale::sim {
namespace {

// Whether some profile of the cluster calibrates a link kind: where none does (datasheet
// profiles), every link is returned as it is without a walk over the node's devices.
bool calibrates_links(const plan::Cluster& cluster) {
  for (const auto& [model, profile] : cluster.profiles) {
    if (!profile.calibration.links.empty()) return true;
  }
  return false;
}

}  // namespace

plan::Link calibrated_link(const plan::Cluster& cluster, int node, plan::Link link) {
  if (!calibrates_links(cluster)) return link;
  double scale = 1.0;
  Seconds latency_s = 0;
  bool first = true;
  const std::string* previous_model = nullptr;  // a node's devices are mostly of one model
  for (int id : cluster.nodes.at(node).device_ids) {
    const std::string& device_model = cluster.devices.at(id).model;
    if (previous_model && *previous_model == device_model) continue;  // same figures again
    previous_model = &device_model;
    const auto& links = cluster.profile_of(id).calibration.links;
    const auto it = links.find(link.kind);
    const plan::LinkCalibration figures = it == links.end() ? plan::LinkCalibration{} : it->second;
    scale = first ? figures.bandwidth_scale : std::min(scale, figures.bandwidth_scale);
    latency_s = first ? figures.latency_s : std::max(latency_s, figures.latency_s);
    first = false;
  }
  link.bandwidth_bytes_per_s *= scale;
  link.latency_s += latency_s;
  return link;
}

plan::Link calibrated_intra_link(const plan::Cluster& cluster, int node) {
  return calibrated_link(cluster, node, cluster.nodes.at(node).intra_link);
}

plan::Link calibrated_link_between(const plan::Cluster& cluster, int a, int b) {
  const int node_a = cluster.devices.at(a).node;
  const int node_b = cluster.devices.at(b).node;
  if (node_a == node_b) return calibrated_intra_link(cluster, node_a);
  const plan::Link na = calibrated_link(cluster, node_a, cluster.nodes.at(node_a).network);
  const plan::Link nb = calibrated_link(cluster, node_b, cluster.nodes.at(node_b).network);
  return plan::slower(nb, na) ? nb : na;
}

}  // namespace whale::sim

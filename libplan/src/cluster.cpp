// File: cluster.cpp
// Cluster queries: the profile of a device, the link between two devices, the models present.
#include "whale/plan/cluster.h"

#include <algorithm>

#include "whale/plan/error.h"

namespace whale::plan {
namespace {

const Device& device_at(const Cluster& cluster, int id) {
  if (id < 0 || id >= static_cast<int>(cluster.devices.size())) {
    throw Error(cluster.source_file, "", "device " + std::to_string(id) + " is not in cluster '" +
                cluster.name + "'", "valid ids are 0.." + std::to_string(static_cast<int>(cluster.devices.size()) - 1));
  }
  return cluster.devices[id];
}

}  // namespace

bool slower(const Link& a, const Link& b) {
  if (a.bandwidth_bytes_per_s != b.bandwidth_bytes_per_s) return a.bandwidth_bytes_per_s < b.bandwidth_bytes_per_s;
  return a.latency_s > b.latency_s;
}

Link slowest(const Link& a, const Link& b) {
  Link out = a.bandwidth_bytes_per_s <= b.bandwidth_bytes_per_s ? a : b;
  out.latency_s = std::max(a.latency_s, b.latency_s);
  return out;
}

Seconds ring_reduce_scatter_s(Bytes bytes, int ranks, const Link& link) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double steps = ranks - 1;
  return steps / ranks * bytes / link.bandwidth_bytes_per_s + steps * link.latency_s;
}

const DeviceProfile& Cluster::profile_of(int device_id) const {
  const Device& device = device_at(*this, device_id);
  auto it = profiles.find(device.model);
  if (it == profiles.end()) {
    throw Error(source_file, "", "no profile loaded for device model '" + device.model + "'");
  }
  return it->second;
}

std::vector<const DeviceProfile*> Cluster::distinct_profiles(const std::vector<int>& device_ids) const {
  std::vector<const DeviceProfile*> out;
  for (int id : device_ids) {
    const DeviceProfile* profile = &profile_of(id);
    if (std::find(out.begin(), out.end(), profile) == out.end()) out.push_back(profile);
  }
  return out;
}

Link Cluster::link_between(int a, int b) const {
  const Device& da = device_at(*this, a);
  const Device& db = device_at(*this, b);
  if (da.node == db.node) return nodes[da.node].intra_link;
  const Link& na = nodes[da.node].network;
  const Link& nb = nodes[db.node].network;
  return slower(nb, na) ? nb : na;
}

bool Cluster::runs_inside_nodes(const std::vector<int>& device_ids, int width) const {
  if (width < 1 || device_ids.size() % static_cast<std::size_t>(width) != 0) return false;
  for (std::size_t first = 0; first < device_ids.size(); first += width) {
    const int node = device_at(*this, device_ids[first]).node;
    for (std::size_t i = first + 1; i < first + width; ++i) {
      if (device_at(*this, device_ids[i]).node != node) return false;
    }
  }
  return true;
}

Link Node::per_device_share(Link link) const {
  link.bandwidth_bytes_per_s /= std::max<std::size_t>(1, device_ids.size());
  return link;
}

Link Cluster::concurrent_link_between(int a, int b) const {
  const Device& da = device_at(*this, a);
  const Device& db = device_at(*this, b);
  if (da.node == db.node) return nodes[da.node].intra_link;
  const Link na = nodes[da.node].per_device_share(nodes[da.node].network);
  const Link nb = nodes[db.node].per_device_share(nodes[db.node].network);
  return slower(nb, na) ? nb : na;
}

std::vector<std::string> Cluster::device_models() const {
  std::vector<std::string> models;
  for (const Device& device : devices) {
    if (std::find(models.begin(), models.end(), device.model) == models.end()) models.push_back(device.model);
  }
  return models;
}

}  // namespace whale::plan

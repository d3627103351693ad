// File: cluster_yaml.cpp
// Reads and writes configs/clusters/<name>.yaml (schema: docs/cluster.md).
#include <optional>
#include <set>

#include "spec_yaml.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {

constexpr double kSecondsPerUs = 1e-6;

Link parse_link(const YamlField& field) {
  field.expect_keys({"kind", "bandwidth_gbps", "latency_us"});
  Link link;
  link.kind = field.get("kind").text();
  link.bandwidth_bytes_per_s = gbps_to_bytes_per_s(field.get("bandwidth_gbps").number_in(
      kMinLinkGbps, kMaxLinkGbps, "gigabits per second: NVLink 4 gives 7200 per GPU, 100 Gb Ethernet 100"));
  link.latency_s = field.get("latency_us").number_in(0, kMaxLinkLatencyUs,
                                                       "microseconds: NVLink takes a few, InfiniBand about 5") *
                   kSecondsPerUs;
  return link;
}

void emit_link(YAML::Emitter& out, const std::string& key, const Link& link) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_text_field(out, "kind", link.kind);
  emit_number_field(out, "bandwidth_gbps", bytes_per_s_to_gbps(link.bandwidth_bytes_per_s));
  emit_number_field(out, "latency_us", link.latency_s / kSecondsPerUs);
  out << YAML::EndMap;
}

bool same_link(const Link& a, const Link& b) {
  return a.kind == b.kind && a.bandwidth_bytes_per_s == b.bandwidth_bytes_per_s && a.latency_s == b.latency_s;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// A device's hourly price: a finite number in [0, kMaxPricePerHourUsd].
double parse_price(const YamlField& field) {
  const std::string hint = "the price of one device for one hour in US dollars, e.g. 4.10 (docs/cluster.md#prices)";
  double price = 0;
  try {
    price = field.number();
  } catch (const Error& e) {
    throw Error(e.file(), e.yaml_path(), e.expected(), hint);
  }
  if (price < 0 || price > kMaxPricePerHourUsd) {
    field.fail("expected a price in USD per device-hour in [0, " + std::to_string(static_cast<long>(kMaxPricePerHourUsd)) +
                   "], got '" + field.text() + "'",
               hint);
  }
  return price;
}

// Loads the profile of `model` once; an unknown model fails at `field` listing what exists.
void ensure_profile(Cluster& cluster, const YamlField& field, const std::string& model,
                    const std::string& profiles_dir) {
  if (cluster.profiles.count(model)) return;
  const std::vector<std::string> known = available_profiles(profiles_dir);
  bool found = false;
  for (const std::string& name : known) found = found || name == model;
  if (!found) {
    field.fail("unknown device model '" + model + "' (no " + profiles_dir + "/" + model + ".yaml)",
               "available profiles: " + (known.empty() ? std::string("none") : join(known)));
  }
  cluster.profiles[model] = load_device_profile(profiles_dir + "/" + model + ".yaml");
}

// Appends one node entry (count copies of it) to the cluster. A cluster of one node needs no
// network (`only_node`): no transfer leaves the node, and its network is taken as its intra link.
void parse_node(Cluster& cluster, const YamlField& entry, const Link* default_network, bool only_node,
                const std::string& profiles_dir, std::set<std::string>& names) {
  entry.expect_keys({"name", "count", "devices", "intra_link", "network"});
  const YamlField name_field = entry.get("name");
  const std::string name = name_field.text();
  const bool expand = entry.has("count");
  const int copies = expand ? static_cast<int>(entry.get("count").count(kMaxNodes, "nodes")) : 1;
  const Link intra = parse_link(entry.get("intra_link"));
  const bool alone = only_node && copies == 1;
  if (!entry.has("network") && default_network == nullptr && !alone) {
    entry.get("network");  // fails: "missing field"
  }
  const Link network = entry.has("network")  ? parse_link(entry.get("network"))
                       : default_network ? *default_network
                                         : intra;
  struct DeviceEntry {
    std::string model;
    int count = 1;
    std::optional<double> price_per_hour_usd;
  };
  std::vector<DeviceEntry> groups;  // in order
  const YamlField devices = entry.get("devices");
  if (devices.elements().empty()) {
    devices.fail("expected at least one device entry", "e.g. devices: [{model: a100-sxm4-80gb, count: 8}]");
  }
  for (const YamlField& group : devices.elements()) {
    group.expect_keys({"model", "count", "price_per_hour_usd"});
    const YamlField model = group.get("model");
    ensure_profile(cluster, model, model.text(), profiles_dir);
    DeviceEntry e{model.text(), 1, std::nullopt};
    if (group.has("count")) e.count = static_cast<int>(group.get("count").count(kMaxDevices, "devices"));
    if (group.has("price_per_hour_usd")) e.price_per_hour_usd = parse_price(group.get("price_per_hour_usd"));
    groups.push_back(e);
  }
  // Checked before expanding, so that a huge count fails at once instead of filling memory.
  int64_t per_node = 0;
  for (const DeviceEntry& group : groups) per_node += group.count;
  const int64_t total = static_cast<int64_t>(cluster.devices.size()) + per_node * copies;
  if (total > kMaxDevices) {
    entry.fail("expected at most " + std::to_string(kMaxDevices) + " devices in the cluster, got " +
                   std::to_string(total) + " so far",
               "whale's limit on devices (docs/limits.md)");
  }
  for (int copy = 0; copy < copies; ++copy) {
    Node node;
    node.name = expand ? name + "-" + std::to_string(copy) : name;
    if (!names.insert(node.name).second) {
      name_field.fail("node name '" + node.name + "' is used twice", "give every node a distinct name");
    }
    node.intra_link = intra;
    node.network = network;
    const int node_index = static_cast<int>(cluster.nodes.size());
    for (const DeviceEntry& group : groups) {
      for (int i = 0; i < group.count; ++i) {
        Device device;
        device.id = static_cast<int>(cluster.devices.size());
        device.node = node_index;
        device.local_index = static_cast<int>(node.device_ids.size());
        device.model = group.model;
        device.price_per_hour_usd = group.price_per_hour_usd;
        node.device_ids.push_back(device.id);
        cluster.devices.push_back(device);
      }
    }
    cluster.nodes.push_back(node);
  }
}

}  // namespace

Cluster parse_cluster(const YamlField& root, const std::string& profiles_dir) {
  root.expect_keys({"name", "network", "nodes"});
  Cluster cluster;
  cluster.source_file = root.file();
  cluster.name = root.get("name").text();
  Link network;
  const bool has_network = root.has("network");
  if (has_network) network = parse_link(root.get("network"));
  const std::string dir = profiles_dir.empty() ? default_profiles_dir() : profiles_dir;
  const YamlField nodes = root.get("nodes");
  if (nodes.elements().empty()) {
    nodes.fail("expected at least one node", "list each machine: - {name: n0, devices: [...], intra_link: {...}}");
  }
  std::set<std::string> names;
  const std::vector<YamlField> entries = nodes.elements();
  for (const YamlField& entry : entries) {
    parse_node(cluster, entry, has_network ? &network : nullptr, entries.size() == 1, dir, names);
  }
  return cluster;
}

Cluster load_cluster(const std::string& path, const std::string& profiles_dir) {
  return parse_cluster(load_yaml_file(path), profiles_dir);
}

void emit_cluster(YAML::Emitter& out, const Cluster& cluster) {
  out << YAML::BeginMap;
  emit_text_field(out, "name", cluster.name);
  const Link* common = cluster.nodes.empty() ? nullptr : &cluster.nodes.front().network;
  if (common != nullptr) emit_link(out, "network", *common);
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const Node& node : cluster.nodes) {
    out << YAML::BeginMap;
    emit_text_field(out, "name", node.name);
    out << YAML::Key << "devices" << YAML::Value << YAML::BeginSeq;
    // Consecutive devices of one model and price form one {model, count, price} entry.
    for (std::size_t i = 0; i < node.device_ids.size();) {
      const Device& first = cluster.devices[node.device_ids[i]];
      std::size_t j = i;
      while (j < node.device_ids.size() && cluster.devices[node.device_ids[j]].model == first.model &&
             cluster.devices[node.device_ids[j]].price_per_hour_usd == first.price_per_hour_usd)
        ++j;
      out << YAML::Flow << YAML::BeginMap;
      emit_text_field(out, "model", first.model);
      emit_number_field(out, "count", static_cast<double>(j - i));
      if (first.price_per_hour_usd) emit_number_field(out, "price_per_hour_usd", *first.price_per_hour_usd);
      out << YAML::EndMap;
      i = j;
    }
    out << YAML::EndSeq;
    emit_link(out, "intra_link", node.intra_link);
    if (!same_link(node.network, *common)) emit_link(out, "network", node.network);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

void save_cluster(const Cluster& cluster, const std::string& path) {
  YAML::Emitter out;
  emit_cluster(out, cluster);
  write_file_atomically(path, std::string(out.c_str()) + "\n");
}

}  // namespace whale::plan

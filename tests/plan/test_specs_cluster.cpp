// File: test_specs_cluster.cpp
// Clusters: node expansion, global device ids, link_between and concurrent_link_between, a
// device set's members per node, the save/load round trip, and bad clusters (unknown device model, missing network, duplicate
// node names).
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "test_specs_util.h"
#include "whale/plan/cluster.h"
#include "whale/plan/node_members.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

namespace {

// Two expanded "fast" nodes of 2 A100s, then one mixed node with a slower NIC of its own.
const char* kCluster =
    "name: lab\n"
    "network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 2}\n"
    "nodes:\n"
    "  - name: fast\n"
    "    count: 2\n"
    "    devices: [{model: a100-sxm4-80gb, count: 2}]\n"
    "    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}\n"
    "  - name: mixed\n"
    "    devices: [{model: t4}, {model: v100-sxm2-16gb, count: 2}]\n"
    "    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}\n"
    "    network: {kind: ethernet, bandwidth_gbps: 100, latency_us: 20}\n";

std::string cluster_with(const std::string& from, const std::string& to) {
  std::string text = kCluster;
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a cluster expands node counts and numbers devices in file order") {
  const Cluster c = load_cluster(scratch_file("lab.yaml", kCluster));
  CHECK(c.name == "lab");
  REQUIRE(c.nodes.size() == 3);
  CHECK(c.nodes[0].name == "fast-0");
  CHECK(c.nodes[1].name == "fast-1");
  CHECK(c.nodes[2].name == "mixed");
  REQUIRE(c.devices.size() == 7);
  CHECK(c.nodes[1].device_ids == std::vector<int>{2, 3});
  CHECK(c.nodes[2].device_ids == std::vector<int>{4, 5, 6});
  CHECK(c.devices[3].node == 1);
  CHECK(c.devices[3].local_index == 1);
  CHECK(c.devices[4].model == "t4");
  CHECK(c.devices[6].model == "v100-sxm2-16gb");
  CHECK(c.device_models() == std::vector<std::string>{"a100-sxm4-80gb", "t4", "v100-sxm2-16gb"});
  CHECK(c.profiles.size() == 3);
  CHECK(c.profile_of(5).name == "v100-sxm2-16gb");
  CHECK(c.nodes[0].network.bandwidth_bytes_per_s == 25e9);  // the default 200 Gb/s
}

TEST_CASE("link_between: intra-node link, else the slower NIC") {
  const Cluster c = load_cluster(scratch_file("lab.yaml", kCluster));
  const Link same = c.link_between(0, 1);
  CHECK(same.kind == "nvlink");
  CHECK(same.bandwidth_bytes_per_s == 600e9);
  CHECK(same.latency_s == doctest::Approx(3e-6));
  CHECK(c.link_between(1, 2).kind == "infiniband");
  CHECK(c.link_between(1, 2).bandwidth_bytes_per_s == 25e9);
  const Link cross = c.link_between(0, 5);  // 200 Gb/s IB vs the mixed node's 100 Gb/s Ethernet
  CHECK(cross.kind == "ethernet");
  CHECK(cross.bandwidth_bytes_per_s == 12.5e9);
  CHECK(c.link_between(5, 0).kind == "ethernet");
  CHECK(c.link_between(4, 6).kind == "pcie");
  // time_for: alpha + bytes / beta.
  CHECK(cross.time_for(12.5e9) == doctest::Approx(1.0 + 20e-6));
  CHECK_SPEC_ERROR([&] { c.link_between(0, 7); }, c.source_file, "", "device 7 is not in cluster 'lab'");
}

TEST_CASE("concurrent_link_between: intra-node link, else the slower per-device network share") {
  const Cluster c = load_cluster(scratch_file("lab.yaml", kCluster));
  CHECK(c.concurrent_link_between(0, 1).bandwidth_bytes_per_s == 600e9);  // NVLink, per device
  // 200 Gb/s IB shared by the fast nodes' 2 devices: 12.5e9 B/s each.
  CHECK(c.concurrent_link_between(1, 2).bandwidth_bytes_per_s == 12.5e9);
  CHECK(c.concurrent_link_between(1, 2).latency_s == doctest::Approx(2e-6));
  // The mixed node's 100 Gb/s Ethernet over its 3 devices (4.1667e9 B/s) is the slower share.
  const Link cross = c.concurrent_link_between(0, 5);
  CHECK(cross.kind == "ethernet");
  CHECK(cross.bandwidth_bytes_per_s == doctest::Approx(12.5e9 / 3));
  CHECK(c.concurrent_link_between(5, 0).bandwidth_bytes_per_s == doctest::Approx(12.5e9 / 3));
  CHECK_SPEC_ERROR([&] { c.concurrent_link_between(0, 7); }, c.source_file, "", "device 7 is not in cluster 'lab'");
}

TEST_CASE("members_per_node lists a device set's nodes ascending with their counts") {
  const Cluster c = load_cluster(scratch_file("lab.yaml", kCluster));
  // Devices 0-1 on fast-0, 2-3 on fast-1, 4-6 on mixed; the order given does not matter.
  using Members = std::vector<std::pair<int, int>>;
  CHECK(members_per_node(c, {6, 0, 4, 5}) == Members{{0, 1}, {2, 3}});
  CHECK(members_per_node(c, {3, 1, 2}) == Members{{0, 1}, {1, 2}});
  CHECK(members_per_node(c, {}).empty());
  CHECK(most_in_one_node(c, {6, 0, 4, 5}) == 3);
  CHECK(most_in_one_node(c, {0, 2}) == 1);
  CHECK(most_in_one_node(c, {}) == 0);
}

TEST_CASE("per_device_share divides a link's bandwidth among the node's devices, at least one") {
  Node node;
  const Link nic{"infiniband", 25e9, 2e-6};
  CHECK(node.per_device_share(nic).bandwidth_bytes_per_s == 25e9);  // no devices: counted as one
  node.device_ids = {4, 5, 6, 7};
  const Link share = node.per_device_share(nic);
  CHECK(share.bandwidth_bytes_per_s == 6.25e9);
  CHECK(share.latency_s == 2e-6);
  CHECK(share.kind == "infiniband");
}

TEST_CASE("a cluster survives save and load") {
  const Cluster original = load_cluster(scratch_file("lab.yaml", kCluster));
  const std::string path = std::string(WHALE_BINARY_DIR) + "/specs-scratch/lab-saved.yaml";
  save_cluster(original, path);
  const Cluster back = load_cluster(path);
  REQUIRE(back.nodes.size() == original.nodes.size());
  REQUIRE(back.devices.size() == original.devices.size());
  for (std::size_t i = 0; i < back.devices.size(); ++i) {
    CHECK(back.devices[i].model == original.devices[i].model);
    CHECK(back.devices[i].node == original.devices[i].node);
  }
  for (std::size_t n = 0; n < back.nodes.size(); ++n) {
    CHECK(back.nodes[n].name == original.nodes[n].name);
    CHECK(back.nodes[n].network.bandwidth_bytes_per_s == original.nodes[n].network.bandwidth_bytes_per_s);
    CHECK(back.nodes[n].intra_link.latency_s == doctest::Approx(original.nodes[n].intra_link.latency_s));
  }
  const std::string again = std::string(WHALE_BINARY_DIR) + "/specs-scratch/lab-saved-again.yaml";
  save_cluster(back, again);
  std::ifstream x(path), y(again);
  const std::string tx((std::istreambuf_iterator<char>(x)), {}), ty((std::istreambuf_iterator<char>(y)), {});
  CHECK(tx == ty);
}

TEST_CASE("an unknown device model lists the available profiles") {
  const std::string path = scratch_file("unknown-model.yaml", cluster_with("model: t4", "model: z100"));
  CHECK_SPEC_ERROR([&] { load_cluster(path); }, path, "nodes[1].devices[0].model", "unknown device model 'z100'");
  const whale::Error e = whale::plan::testing::expect_error([&] { load_cluster(path); });
  CHECK(e.hint().find("available profiles: a10, a100-sxm4-40gb") != std::string::npos);
  CHECK(e.hint().find("v100-sxm2-32gb") != std::string::npos);
}

TEST_CASE("a cluster of one node needs no network: its intra link stands for it") {
  const std::string p = scratch_file("one-node.yaml",
                                     "name: box\nnodes:\n  - name: n\n    devices: [{model: t4, count: 2}]\n"
                                     "    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}\n");
  const Cluster c = load_cluster(p);
  REQUIRE(c.nodes.size() == 1);
  CHECK(c.nodes[0].network.bandwidth_bytes_per_s == c.nodes[0].intra_link.bandwidth_bytes_per_s);
  CHECK(c.nodes[0].network.latency_s == c.nodes[0].intra_link.latency_s);
  CHECK(c.nodes[0].network.kind == "pcie");
  // Two copies of the node do talk over a network: it is required then.
  const std::string two = scratch_file("two-copies.yaml",
                                       "name: box\nnodes:\n  - name: n\n    count: 2\n    devices: [{model: t4, count: 2}]\n"
                                       "    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}\n");
  CHECK_SPEC_ERROR([&] { load_cluster(two); }, two, "nodes[0].network", "missing field 'network'");
}

TEST_CASE("bad clusters name the field") {
  std::string p = scratch_file("no-network.yaml",
                               cluster_with("network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 2}\n", ""));
  CHECK_SPEC_ERROR([&] { load_cluster(p); }, p, "nodes[0].network", "missing field 'network'");
  p = scratch_file("duplicate-node.yaml", cluster_with("name: mixed", "name: fast-1"));
  CHECK_SPEC_ERROR([&] { load_cluster(p); }, p, "nodes[1].name", "node name 'fast-1' is used twice");
  p = scratch_file("zero-count.yaml", cluster_with("count: 2\n", "count: 0\n"));
  CHECK_SPEC_ERROR([&] { load_cluster(p); }, p, "nodes[0].count", "expected a positive integer, got '0'");
  p = scratch_file("no-devices.yaml", cluster_with("devices: [{model: a100-sxm4-80gb, count: 2}]", "devices: []"));
  CHECK_SPEC_ERROR([&] { load_cluster(p); }, p, "nodes[0].devices", "expected at least one device entry");
  p = scratch_file("bad-link.yaml", cluster_with("latency_us: 5}", "latency: 5}"));
  CHECK_SPEC_ERROR([&] { load_cluster(p); }, p, "nodes[1].intra_link.latency", "unknown key 'latency'");
}

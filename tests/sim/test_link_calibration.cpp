// File: test_link_calibration.cpp
// Per-link-kind calibration (calibration.links.<kind>): a kind's bandwidth scale and added
// latency change exactly the collectives and transfers over links of that kind, by the
// alpha-beta amount, and nothing else.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/link_calibration.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// 2 nodes x `per_node` devices: intra "nvlink" 1e11 B/s, 1 us; network "infiniband"
/// `network_bytes_per_s` (default 4e10: 1e10 per device of 4), 10 us; every profile with
/// `links` as its link calibration.
plan::Cluster cluster_with(const std::map<std::string, plan::LinkCalibration>& links, int per_node = 4,
                           double network_bytes_per_s = 4e10) {
  plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
  profile.calibration.links = links;
  plan::Link intra = test::link(1e11, 1e-6);
  intra.kind = "nvlink";
  plan::Link network = test::link(network_bytes_per_s, 1e-5);
  network.kind = "infiniband";
  return test::make_cluster(2, per_node, profile, intra, network);
}

const std::vector<int> kAll = {0, 1, 2, 3, 4, 5, 6, 7};

}  // namespace

TEST_CASE("a network calibration changes the inter-node phase and transfers only") {
  const plan::Cluster c = cluster_with({{"infiniband", {0.5, 2e-6}}});
  // Inside a node: the intra ring as uncalibrated, 3/4 * 8e8 / 1e11 + 3 * 1e-6.
  CHECK(reduce_scatter_s(c, {0, 1, 2, 3}, 8e8) == doctest::Approx(0.006 + 3e-6));
  CHECK(p2p_s(c, 0, 1, 1e8) == doctest::Approx(1e-6 + 1e-3));
  // Across nodes: the intra reduce-scatter unchanged, then the inter ring reduce-scatter of 2e8
  // over 2 nodes on the share at half bandwidth (5e9) with 12 us: 1/2 * 2e8 / 5e9 + 1.2e-5.
  CHECK(reduce_scatter_s(c, kAll, 8e8) == doctest::Approx(0.006 + 3e-6 + 0.02 + 1.2e-5));
  CHECK(allreduce_s(c, kAll, 8e8) == doctest::Approx(2 * (0.006 + 3e-6 + 0.02 + 1.2e-5)));
  CHECK(allreduce_s(c, {0, 4}, 8e8) == doctest::Approx(0.16 + 2 * 1.2e-5));
  // A transfer between nodes: 12 us + 1e8 / 2e10.
  CHECK(p2p_s(c, 0, 4, 1e8) == doctest::Approx(1.2e-5 + 5e-3));
}

TEST_CASE("an intra-node calibration changes the intra phases and transfers only") {
  const plan::Cluster c = cluster_with({{"nvlink", {2.0, 4e-6}}});
  // Ring reduce-scatter on 2e11 B/s with 5 us: 3/4 * 8e8 / 2e11 + 3 * 5e-6.
  CHECK(reduce_scatter_s(c, {0, 1, 2, 3}, 8e8) == doctest::Approx(0.003 + 1.5e-5));
  CHECK(reduce_scatter_s(c, kAll, 8e8) == doctest::Approx(0.003 + 1.5e-5 + 0.01 + 1e-5));
  CHECK(p2p_s(c, 0, 1, 1e8) == doctest::Approx(5e-6 + 5e-4));
  CHECK(p2p_s(c, 0, 4, 1e8) == doctest::Approx(1e-5 + 2.5e-3));  // the network: unchanged
}

TEST_CASE("a calibration of a kind no link has, or the default, changes nothing") {
  const plan::Cluster plain = cluster_with({});
  const plan::Cluster other = cluster_with({{"ethernet", {0.1, 1e-3}}, {"nvlink", {}}});
  for (const std::vector<int>& group : {std::vector<int>{0, 1, 2, 3}, kAll, std::vector<int>{0, 4}}) {
    CHECK(allreduce_s(other, group, 8e8) == allreduce_s(plain, group, 8e8));
  }
  CHECK(p2p_s(other, 0, 4, 1e8) == p2p_s(plain, 0, 4, 1e8));
  CHECK(p2p_s(other, 0, 1, 1e8) == p2p_s(plain, 0, 1, 1e8));
}

TEST_CASE("a node of several device models takes the slowest of their link figures") {
  plan::Cluster c = cluster_with({{"nvlink", {0.5, 1e-6}}});
  plan::DeviceProfile other = c.profiles.at("flat");
  other.name = "other";
  other.calibration.links = {{"nvlink", {0.8, 3e-6}}};
  c.profiles["other"] = other;
  c.devices[1].model = "other";
  const plan::Link link = calibrated_intra_link(c, 0);
  CHECK(link.bandwidth_bytes_per_s == doctest::Approx(5e10));
  CHECK(link.latency_s == doctest::Approx(4e-6));
  CHECK(calibrated_intra_link(c, 1).latency_s == doctest::Approx(2e-6));  // node 1: flat only
}

TEST_CASE("in a step, a link calibration adds exactly its share of the transfers on that kind") {
  // Two pipeline stages on two nodes (one device each), one micro-batch: the activation (1e8
  // bytes) and its gradient cross the network once each, on the critical path, each
  // 1e-5 + 1e8 / 1e10; each layer computes 6.2e-5 (test_calibration_apply.cpp).
  const auto step_s = [](const std::map<std::string, plan::LinkCalibration>& links) {
    const plan::Cluster cluster = cluster_with(links, 1, 1e10);
    plan::Layer layer = test::gemm_layer(1000, 1000, 1000, 1e6);
    layer.output_bytes = 1e8;
    return Simulator().evaluate(test::pipeline_plan(cluster, {layer, layer}, plan::ScheduleKind::one_f_one_b, 1), {})
        .step_time_s;
  };
  const double plain = 2 * 6.2e-5 + 2 * (1e-5 + 1e-2);
  CHECK(step_s({}) == doctest::Approx(plain));
  CHECK(step_s({{"infiniband", {1.0, 1e-3}}}) == doctest::Approx(plain + 2e-3));
  CHECK(step_s({{"infiniband", {0.5, 0}}}) == doctest::Approx(plain + 2e-2));
  CHECK(step_s({{"nvlink", {0.1, 1e-3}}}) == plain);  // no intra-node traffic
}

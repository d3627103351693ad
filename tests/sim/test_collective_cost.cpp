// File: test_collective_cost.cpp
// Ring and hierarchical all-reduce and point-to-point times against the alpha-beta formulas.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/collective_cost.h"

using namespace whale;
using namespace whale::sim;

TEST_CASE("ring all-reduce: 2(n-1)/n * bytes / bw + 2(n-1) * latency") {
  const plan::Link l = test::link(1e10, 1e-5);
  CHECK(ring_allreduce_s(1e9, 4, l) == doctest::Approx(0.15 + 6e-5));
  CHECK(ring_reduce_scatter_s(1e9, 4, l) == doctest::Approx(0.075 + 3e-5));
  CHECK(ring_allreduce_s(1e9, 1, l) == 0);
  CHECK(ring_allreduce_s(0, 4, l) == 0);
}

TEST_CASE("all-reduce inside one node runs a ring on the intra link") {
  const plan::Cluster c = test::make_cluster(2, 4, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 1e-6), test::link(4e10, 1e-5));
  CHECK(allreduce_s(c, {0, 1, 2, 3}, 8e8) == doctest::Approx(ring_allreduce_s(8e8, 4, c.nodes[0].intra_link)));
  CHECK(allreduce_s(c, {5}, 8e8) == 0);
}

TEST_CASE("all-reduce across nodes is hierarchical over each device's network share") {
  // 2 nodes x 4 devices; the node NIC (4e10 B/s) is shared by 4 devices: 1e10 each.
  const plan::Cluster c = test::make_cluster(2, 4, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 1e-6), test::link(4e10, 1e-5));
  CHECK(device_network_share(c, 1).bandwidth_bytes_per_s == doctest::Approx(1e10));
  // Intra reduce-scatter 3/4*8e8/1e11 + 3e-6, inter all-reduce of 2e8 over 2 nodes
  // 2e8/1e10 + 2e-5, intra all-gather as the reduce-scatter.
  const double expected = 2 * (0.006 + 3e-6) + (0.02 + 2e-5);
  CHECK(allreduce_s(c, {0, 1, 2, 3, 4, 5, 6, 7}, 8e8) == doctest::Approx(expected));
  // One device per node: only the inter-node ring.
  CHECK(allreduce_s(c, {0, 4}, 8e8) == doctest::Approx(0.08 + 2e-5));
}

TEST_CASE("reduce-scatter and all-gather are each half of the hierarchical all-reduce") {
  const plan::Cluster c = test::make_cluster(2, 4, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 1e-6), test::link(4e10, 1e-5));
  // One node: a ring reduce-scatter, 3/4 * 8e8 / 1e11 + 3 * 1e-6.
  CHECK(reduce_scatter_s(c, {0, 1, 2, 3}, 8e8) == doctest::Approx(0.006 + 3e-6));
  CHECK(all_gather_s(c, {0, 1, 2, 3}, 8e8) == doctest::Approx(0.006 + 3e-6));
  // Two nodes: intra reduce-scatter (0.006 + 3e-6), then an inter ring reduce-scatter of 2e8
  // over 2 nodes on the 1e10 B/s share: 1/2 * 2e8 / 1e10 + 1e-5.
  CHECK(reduce_scatter_s(c, {0, 1, 2, 3, 4, 5, 6, 7}, 8e8) == doctest::Approx(0.006 + 3e-6 + 0.01 + 1e-5));
  CHECK(reduce_scatter_s(c, {0, 1, 2, 3, 4, 5, 6, 7}, 8e8) +
            all_gather_s(c, {0, 1, 2, 3, 4, 5, 6, 7}, 8e8) ==
        doctest::Approx(allreduce_s(c, {0, 1, 2, 3, 4, 5, 6, 7}, 8e8)));
  CHECK(reduce_scatter_s(c, {3}, 8e8) == 0);
}

TEST_CASE("the slowest node bounds a hierarchical all-reduce") {
  plan::Cluster c = test::make_cluster(2, 2, test::flat_profile(1e14, 1e12),
                                       test::link(1e11, 1e-6), test::link(2e10, 1e-5));
  c.nodes[1].network = test::link(2e9, 3e-5);  // 1e9 per device
  CHECK(allreduce_s(c, {0, 2}, 1e9) == doctest::Approx(1.0 + 2 * 3e-5));
}

TEST_CASE("point-to-point uses the link between the two devices") {
  const plan::Cluster c = test::make_cluster(2, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 1e-6), test::link(2e10, 1e-5));
  CHECK(p2p_s(c, 0, 1, 1e9) == doctest::Approx(1e-6 + 0.01));
  CHECK(p2p_s(c, 1, 2, 1e9) == doctest::Approx(1e-5 + 0.05));
  CHECK(p2p_s(c, 1, 1, 1e9) == 0);
}

// File: test_data_parallel_ring.cpp
// The quick estimate's data-parallel all-reduce (DataParallelRing) is the simulator's: a ring
// among each node's replicas, then one across the nodes on each device's share of its node's
// network. It rang over the whole group at the node's full network bandwidth, so a tp 4 group
// across four nodes of 8 L40S over 10 Gb/s Ethernet reduced in 0.91 s where the simulator took
// 3.1 s (four tp ranks' rings share each node's link) and tp 1 in 4.0 s against 3.1 s.
#include <doctest/doctest.h>

#include <random>

#include "planner_fixtures.h"
#include "whale/plan/data_parallel_ring.h"
#include "whale/sim/collective_cost.h"

using namespace whale;

TEST_CASE("a data-parallel ring across nodes runs on each device's share of the network") {
  // Two nodes of 4 A100s, 2400 Gb/s NVLink (3 us) inside, 100 Gb/s InfiniBand (5 us) between.
  const plan::Cluster cluster = test::four_and_two_nodes("a100-sxm4-80gb");
  // Devices 0-3 on the first node, 4-5 on the second: tp 2, three replicas (two, then one).
  const plan::DataParallelRing ring = plan::data_parallel_ring(cluster, {0, 1, 2, 3, 4, 5}, 2);
  CHECK(ring.local == 2);
  CHECK(ring.nodes == 2);
  CHECK(ring.intra.bandwidth_bytes_per_s == doctest::Approx(300e9));
  // The slower share: 12.5 GB/s over the 2 devices of the second node is 6.25 GB/s, over the
  // first node's 4 devices 3.125 GB/s.
  CHECK(ring.network.bandwidth_bytes_per_s == doctest::Approx(3.125e9));
  // 1 GB: inside, 1/2 of it over NVLink; across, 1/2 of its half over the share; twice.
  const double expected = 2 * ((3e-6 + 0.5 * 1e9 / 300e9) + (5e-6 + 0.5 * 0.5e9 / 3.125e9));
  CHECK(ring.allreduce_s(1e9) == doctest::Approx(expected).epsilon(1e-12));
  CHECK(ring.latency_s() == doctest::Approx(2 * (3e-6 + 5e-6)).epsilon(1e-12));
  CHECK(ring.allreduce_s(0) == 0);
  // One node: the ring among its replicas alone.
  const plan::DataParallelRing inside = plan::data_parallel_ring(cluster, {0, 1, 2, 3}, 1);
  CHECK(inside.nodes == 1);
  CHECK(inside.allreduce_s(1e9) == doctest::Approx(2 * (3 * 3e-6 + 0.75 * 1e9 / 300e9)).epsilon(1e-12));
}

TEST_CASE("the quick estimate's data-parallel all-reduce equals the simulator's on random groups") {
  std::mt19937 random(20261206);
  for (const char* name : {"mixed-1024", "a100-v100", "a100-64", "v100-t4", "mixed-node"}) {
    const plan::Cluster cluster = test::shipped_cluster(name);
    const int n = static_cast<int>(cluster.devices.size());
    for (int trial = 0; trial < 40; ++trial) {
      const int tp = 1 << (random() % 3);
      const int replicas = 1 + static_cast<int>(random() % 12);
      if (replicas * tp > n) continue;
      const int first = static_cast<int>(random() % (n - replicas * tp + 1)) / tp * tp;
      std::vector<int> devices, ranks;
      for (int d = first; d < first + replicas * tp; ++d) devices.push_back(d);
      for (int r = 0; r < replicas; ++r) ranks.push_back(devices[r * tp]);
      const double bytes = 1e6 * (1 + random() % 1000);
      CAPTURE(name);
      CAPTURE(first);
      CAPTURE(replicas);
      CAPTURE(tp);
      CHECK(plan::data_parallel_ring(cluster, devices, tp).allreduce_s(bytes) ==
            doctest::Approx(sim::allreduce_s(cluster, ranks, bytes)).epsilon(1e-12));
    }
  }
}

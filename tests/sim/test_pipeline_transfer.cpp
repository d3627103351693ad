// File: test_pipeline_transfer.cpp
// Pipeline transfers between stages whose devices all send at once: every tp rank of the
// receiver takes its input over its own share of the node's network (the full activations, or
// its 1/tp sequence slice under sequence parallelism), checked on tiny 2-stage GPipe plans.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

// A layer of 1e11 flops forward per sample (1 ms at 1e14 flop/s on one device, 0.5 ms at tp 2;
// the backward twice that), whose output is 1e8 bytes per sample.
plan::Layer millisecond_layer() {
  plan::Layer l = test::gemm_layer(1e5, 1e3, 5e2, 0);
  l.output_bytes = 1e8;
  return l;
}

// 2 nodes of 4 devices: NVLink-like intra link 1e11 B/s, node network 4e10 B/s (1e10 B/s for
// each device: a NIC per device), no latency. Stage 0 on node 0, stage 1 on node 1, each
// dp 2 x tp 2, one sample per replica and micro-batch, one micro-batch.
plan::Plan two_node_plan() {
  const plan::Cluster c = test::make_cluster(2, 4, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(4e10, 0));
  return test::pipeline_plan(c, {millisecond_layer(), millisecond_layer()},
                             plan::ScheduleKind::gpipe, 1, 4, 2, 1);
}

}  // namespace

TEST_CASE("a concurrent point-to-point crosses nodes on the slower device share, inside a node on the intra link") {
  plan::Cluster c = test::make_cluster(2, 4, test::flat_profile(1e14, 1e12),
                                       test::link(1e11, 1e-6), test::link(4e10, 1e-5));
  CHECK(concurrent_p2p_s(c, 0, 5, 1e8) == doctest::Approx(1e-5 + 1e8 / 1e10));
  CHECK(concurrent_p2p_s(c, 0, 1, 1e8) == doctest::Approx(1e-6 + 1e8 / 1e11));
  CHECK(concurrent_p2p_s(c, 2, 2, 1e8) == 0);
  c.nodes[1].network = test::link(2e10, 3e-5);  // 5e9 B/s per device on node 1
  CHECK(concurrent_p2p_s(c, 0, 5, 1e8) == doctest::Approx(3e-5 + 1e8 / 5e9));
  CHECK(concurrent_p2p_s(c, 5, 0, 1e8) == doctest::Approx(3e-5 + 1e8 / 5e9));
  // A lone transfer (p2p_s) may use the whole node network: 4 times as fast.
  CHECK(p2p_s(c, 0, 4, 1e8) == doctest::Approx(3e-5 + 1e8 / 2e10));
}

TEST_CASE("across nodes each tp rank of the receiver takes the full activations on its device's network share") {
  // Each of the 4 receiving devices gets 1e8 bytes over 1e10 B/s: 10 ms each way (on the
  // whole node's 4e10 B/s it would be 2.5 ms). At tp 2: F 0.5 + 10 + F 0.5 + B 1 + 10 + B 1
  // = 23 ms.
  const plan::Estimate est = Simulator().evaluate(two_node_plan(), {});
  CHECK(est.step_time_s == doctest::Approx(23e-3));
  CHECK(est.breakdown.pp_comm_s == doctest::Approx(10e-3));  // one send per device
}

TEST_CASE("under sequence parallelism each tp rank takes its 1/tp slice of the sequence") {
  plan::Plan p = two_node_plan();
  p.model.sequence = 2;  // divisible by tp 2
  for (plan::Stage& s : p.stages) s.sequence_parallel = true;
  // 5e7 bytes per device over 1e10 B/s: 5 ms each way. Step: 3 ms of compute + 2 x 5 ms.
  const plan::Estimate est = Simulator().evaluate(p, {});
  CHECK(est.step_time_s == doctest::Approx(13e-3));
  CHECK(est.breakdown.pp_comm_s == doctest::Approx(5e-3));
}

TEST_CASE("stages on one node pass activations over the intra link") {
  const plan::Cluster c = test::make_cluster(1, 8, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(4e10, 0));
  const plan::Plan p = test::pipeline_plan(c, {millisecond_layer(), millisecond_layer()},
                                           plan::ScheduleKind::gpipe, 1, 4, 2, 1);
  // 1e8 bytes over 1e11 B/s: 1 ms each way. Step: 3 ms + 2 x 1 ms.
  const plan::Estimate est = Simulator().evaluate(p, {});
  CHECK(est.step_time_s == doctest::Approx(5e-3));
}

TEST_CASE("a sending device that feeds two receivers at twice its tp sends to them one after the other") {
  plan::Plan p = two_node_plan();
  // Stage 0: dp 2 x tp 1 on devices 0 and 1; stage 1: dp 2 x tp 2 on node 1. Device 0 feeds
  // receivers 4 and 5, each the full 1e8 bytes: 2 x 10 ms each way. Compute: stage 0 at tp 1
  // F 1 + B 2, stage 1 at tp 2 F 0.5 + B 1.
  p.stages[0].tp = 1;
  p.stages[0].devices = {0, 1};
  const plan::Estimate est = Simulator().evaluate(p, {});
  CHECK(est.step_time_s == doctest::Approx(4.5e-3 + 2 * 20e-3));
}

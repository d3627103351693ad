// File: test_zero2_time.cpp
// ZeRO-1's and ZeRO-2's time on a hand-sized stage: ZeRO-1 all-reduces the gradient buckets,
// ZeRO-2 reduce-scatters them (both hidden behind the backward but the last), and both
// all-gather the updated weights after the optimizer step, on the critical path (each replica
// updated only its shard).
#include <doctest/doctest.h>

#include <string>

#include "sim_fixtures.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// One stage of dp 2 on one node (1e11 B/s, no latency), one micro-batch of 1 sample per
/// replica. Four layers, each a 1e4 x 1e4 x 625 GEMM (forward 1.25 ms, backward 2.5 ms at
/// 1e14 flop/s) with 2.5e7 parameters: 5e7 bytes of bf16 gradients, above the default 25 MiB
/// bucket cap, so each layer is one bucket of 5e7 bytes.
plan::Plan sharded_stage_plan() {
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  const plan::Layer layer = test::gemm_layer(1e4, 1e4, 625, 0, 2.5e7);
  plan::Plan p = test::pipeline_plan(c, {layer, layer, layer, layer},
                                     plan::ScheduleKind::one_f_one_b, 1, 2);
  p.stages.resize(1);  // one stage of all four layers on devices 0 and 1
  p.stages[0].end_layer = 4;
  p.stages[0].shard_optimizer = true;
  return p;
}

}  // namespace

TEST_CASE("ZeRO-1 and ZeRO-2 both all-gather the updated weights after the optimizer step") {
  // 4 x 5e7 = 2e8 bytes of bf16 weights: the ring all-gather of 2 replicas moves half of them,
  // 1/2 * 2e8 / 1e11 = 1 ms, on the dp lane.
  plan::Plan p = sharded_stage_plan();
  SimulatorOptions options;
  const plan::Estimate zero1 = Simulator(options).evaluate(p, {true});
  CHECK(test::device_event_s(zero1, "allgather weights s0") == doctest::Approx(1e-3).epsilon(1e-9));
  p.stages[0].shard_gradients = true;
  const plan::Estimate zero2 = Simulator(options).evaluate(p, {true});
  CHECK(test::device_event_s(zero2, "allgather weights s0") == doctest::Approx(1e-3).epsilon(1e-9));
  p.stages[0].shard_optimizer = p.stages[0].shard_gradients = false;
  CHECK(test::device_event_s(Simulator(options).evaluate(p, {true}), "allgather weights s0") == -1);
}

TEST_CASE("ZeRO-2 exposes a reduce-scatter where ZeRO-1 exposes an all-reduce") {
  plan::Plan p = sharded_stage_plan();
  SimulatorOptions options;
  const double zero1_s = Simulator(options).evaluate(p, {}).step_time_s;
  p.stages[0].shard_gradients = true;
  const double zero2_s = Simulator(options).evaluate(p, {}).step_time_s;
  // The first three buckets reduce behind the next layer's backward. ZeRO-1 exposes the last
  // bucket's all-reduce, 2 * 1/2 * 5e7 / 1e11 = 0.5 ms; ZeRO-2 its reduce-scatter, 0.25 ms. The
  // all-gather (1 ms) and the optimizer step (its state sharded in both) are the same.
  CHECK(zero1_s - zero2_s == doctest::Approx(0.25e-3).epsilon(1e-9));
}

// File: test_zero2_time.cpp
// ZeRO-2's time against ZeRO-1's on a hand-sized stage: the gradient buckets are
// reduce-scattered (hidden behind the backward but the last), and the updated weights are
// all-gathered after the optimizer step, on the critical path.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

TEST_CASE("ZeRO-2 exposes the weight all-gather and hides all reduce-scatters but the last") {
  // One stage of dp 2 on one node (1e11 B/s, no latency), one micro-batch of 1 sample per
  // replica. Four layers, each a 1e4 x 1e4 x 625 GEMM (forward 1.25 ms, backward 2.5 ms at
  // 1e14 flop/s) with 2.5e7 parameters: 5e7 bytes of bf16 gradients, above the default 25 MiB
  // bucket cap, so each layer is one bucket of 5e7 bytes.
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  const plan::Layer layer = test::gemm_layer(1e4, 1e4, 625, 0, 2.5e7);
  plan::Plan p = test::pipeline_plan(c, {layer, layer, layer, layer},
                                     plan::ScheduleKind::one_f_one_b, 1, 2);
  p.stages.resize(1);  // one stage of all four layers on devices 0 and 1
  p.stages[0].end_layer = 4;
  p.stages[0].shard_optimizer = true;
  SimulatorOptions options;
  const double zero1_s = Simulator(options).evaluate(p, {}).step_time_s;
  p.stages[0].shard_gradients = true;
  const double zero2_s = Simulator(options).evaluate(p, {}).step_time_s;
  // The first three buckets reduce behind the next layer's backward. ZeRO-1 exposes the last
  // bucket's all-reduce, 2 * 1/2 * 5e7 / 1e11 = 0.5 ms. ZeRO-2 exposes the last bucket's
  // reduce-scatter, 0.25 ms, and the all-gather of 4 x 5e7 = 2e8 bytes of weights,
  // 1/2 * 2e8 / 1e11 = 1 ms. The optimizer step is the same (its state is sharded in both).
  CHECK(zero2_s - zero1_s == doctest::Approx(0.75e-3).epsilon(1e-9));
}

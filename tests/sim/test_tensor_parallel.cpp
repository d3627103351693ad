// File: test_tensor_parallel.cpp
// TP all-reduces sit on the compute stream's critical path (Megatron) unless the Merak-style
// overlap option hides a share of them; full recomputation repeats the forward's all-reduces;
// a replica of two device models runs at the slower one's pace.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

// One stage of tp 2 on one node (1e10 B/s, no latency). Per sample: forward GEMM 1e11 flops
// (0.5 ms per shard at 1e14 flop/s), 1e8 bytes all-reduced per pass: 2*(1/2)*1e8/1e10 = 10 ms.
plan::Plan tp_plan(plan::Recompute recompute) {
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e10, 0), test::link(1e10, 0));
  plan::Layer layer = test::gemm_layer(1e5, 1e3, 5e2, 0);
  layer.tp_allreduce_bytes = 1e8;
  plan::Plan p = test::pipeline_plan(c, {layer}, plan::ScheduleKind::one_f_one_b, 1, 2, 2, 1);
  p.stages[0].recompute = recompute;
  return p;
}

plan::Estimate evaluate(const plan::Plan& p, double tp_overlap) {
  SimulatorOptions options;
  options.tp_overlap = tp_overlap;
  return Simulator(options).evaluate(p, {});
}

}  // namespace

TEST_CASE("TP all-reduces add to forward and backward on the critical path") {
  const plan::Estimate est = evaluate(tp_plan(plan::Recompute::none), 0.0);
  CHECK(est.step_time_s == doctest::Approx(0.5e-3 + 10e-3 + 1e-3 + 10e-3));
  CHECK(est.breakdown.tp_comm_s == doctest::Approx(20e-3));
  CHECK(est.breakdown.exposed_comm_s == doctest::Approx(20e-3));
  CHECK(est.devices.size() == 2);
  CHECK(est.devices[1].busy_s == doctest::Approx(est.step_time_s));
}

TEST_CASE("sub-pipelined TP hides the given share of the all-reduces") {
  CHECK(evaluate(tp_plan(plan::Recompute::none), 0.5).step_time_s ==
        doctest::Approx(1.5e-3 + 10e-3));
  const plan::Estimate hidden = evaluate(tp_plan(plan::Recompute::none), 1.0);
  CHECK(hidden.step_time_s == doctest::Approx(1.5e-3));
  CHECK(hidden.breakdown.tp_comm_s == doctest::Approx(20e-3));
  CHECK(hidden.breakdown.exposed_comm_s == doctest::Approx(0));
}

TEST_CASE("full recomputation repeats the forward and its all-reduces") {
  const plan::Estimate est = evaluate(tp_plan(plan::Recompute::full), 0.0);
  CHECK(est.step_time_s == doctest::Approx(2 * (0.5e-3 + 10e-3) + 1e-3 + 10e-3));
  CHECK(est.breakdown.recompute_s == doctest::Approx(0.5e-3));
  CHECK(est.breakdown.tp_comm_s == doctest::Approx(30e-3));
}

TEST_CASE("a tensor-parallel replica of two device models computes at its slower one's pace") {
  // The same stage with one device at half the peak (5e13 flop/s): the forward shard takes
  // 1 ms and the backward 2 ms on it, whichever tp rank it is, so 1 + 10 + 2 + 10 = 23 ms.
  for (int slow_device : {0, 1}) {
    plan::Plan p = tp_plan(plan::Recompute::none);
    plan::DeviceProfile slow = test::flat_profile(5e13, 1e12);
    slow.name = "slow";
    p.cluster.profiles["slow"] = slow;
    p.cluster.devices[slow_device].model = "slow";
    const plan::Estimate est = evaluate(p, 0.0);
    CHECK(est.step_time_s == doctest::Approx(1e-3 + 10e-3 + 2e-3 + 10e-3));
    CHECK(est.breakdown.tp_comm_s == doctest::Approx(20e-3));
  }
}

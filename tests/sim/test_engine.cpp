// File: test_engine.cpp
// Step times of tiny plans against hand-computed makespans: one device, textbook GPipe and
// 1F1B pipelines, transfers, uneven shares across a bridge, DP reduction before the optimizer.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/op_cost.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

plan::Estimate evaluate(const plan::Plan& p, bool timeline = false) {
  plan::EvaluateOptions options;
  options.timeline = timeline;
  return Simulator().evaluate(p, options);
}

// A layer of 1 ms forward per sample (1e11 flops at 1e14 flop/s) and nothing else.
plan::Layer millisecond_layer(double output_bytes = 0) {
  plan::Layer l = test::gemm_layer(1e5, 1e3, 5e2, 0);
  l.output_bytes = output_bytes;
  return l;
}

}  // namespace

TEST_CASE("a one-device plan's step is the sum of its op costs and its optimizer step") {
  plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
  const plan::Cluster c = test::make_cluster(1, 1, profile, test::link(1e11, 0), test::link(1e10, 0));
  const plan::Plan p = test::pipeline_plan(c, {test::gemm_layer(1000, 1000, 1000, 1e6, 1e6)},
                                           plan::ScheduleKind::one_f_one_b, 3, 1, 1, 2);
  // Per micro-batch of 2 samples: forward 4e-5 + 2e-6, backward 8e-5 + 2e-6.
  // Optimizer: 1e6 params * (2 grad + 2*12 state + 2*2 weights) bytes / 1e12 B/s = 3e-5.
  const plan::Estimate est = evaluate(p);
  CHECK(est.step_time_s == doctest::Approx(3 * (4.2e-5 + 8.2e-5) + 3e-5));
  const LayerCost cost = layer_cost(p.model.layers[0], profile, plan::Precision::bf16, 1, 2,
                                    plan::Recompute::none);
  CHECK(est.step_time_s == doctest::Approx(3 * (cost.forward_s + cost.backward_s) + 3e-5));
  CHECK(est.bubble_fraction == doctest::Approx(0).epsilon(1e-12));
  CHECK(est.devices.size() == 1);
  CHECK(est.devices[0].busy_s == doctest::Approx(est.step_time_s));
  CHECK(est.model_flops_per_step == doctest::Approx(3 * 2e9 * 6));
  CHECK(est.mfu == doctest::Approx(3 * 2e9 * 6 / est.step_time_s / 1e14));
  CHECK(est.samples_per_s == doctest::Approx(6 / est.step_time_s));
}

TEST_CASE("GPipe and 1F1B on 2 equal stages: (m + p - 1)(f + b), bubble (p-1)/(m+p-1)") {
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  for (plan::ScheduleKind kind : {plan::ScheduleKind::gpipe, plan::ScheduleKind::one_f_one_b}) {
    CAPTURE(plan::to_string(kind));
    const plan::Plan p = test::pipeline_plan(c, {millisecond_layer(), millisecond_layer()}, kind, 4);
    const plan::Estimate est = evaluate(p);
    CHECK(est.step_time_s == doctest::Approx(5 * 3e-3));
    CHECK(est.bubble_fraction == doctest::Approx(1.0 / 5));
    CHECK(est.breakdown.idle_s == doctest::Approx(3e-3));
    CHECK(est.breakdown.compute_s == doctest::Approx(12e-3));
  }
}

TEST_CASE("a pipeline send sits between the stages' forwards and backwards") {
  // 1e8 bytes over a 1e10 B/s link: 10 ms each way.
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e10, 0), test::link(1e10, 0));
  const plan::Plan p = test::pipeline_plan(c, {millisecond_layer(1e8), millisecond_layer(1e8)},
                                           plan::ScheduleKind::gpipe, 1);
  const plan::Estimate est = evaluate(p);
  CHECK(est.step_time_s == doctest::Approx(2e-3 + 4e-3 + 2 * 10e-3));
  CHECK(est.breakdown.pp_comm_s == doctest::Approx(10e-3));  // one send per device
  CHECK(est.breakdown.exposed_comm_s == doctest::Approx(10e-3));
}

TEST_CASE("uneven shares: the next stage waits for the slowest sender of its samples") {
  const plan::Cluster c = test::make_cluster(1, 3, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  plan::Plan p = test::pipeline_plan(c, {millisecond_layer(), millisecond_layer()},
                                     plan::ScheduleKind::gpipe, 1);
  p.micro_batch_size = 4;
  p.stages[0].devices = {0, 1};
  p.stages[0].shares = {1, 3};
  p.stages[1].devices = {2};
  p.stages[1].shares = {4};
  // Replica 1 of stage 0: F 3 ms; stage 1: F 4 ms, B 8 ms; then replica 1's B 6 ms.
  const plan::Estimate est = evaluate(p);
  CHECK(est.step_time_s == doctest::Approx(21e-3));
  REQUIRE(est.devices.size() == 3);
  CHECK(est.devices[0].busy_s == doctest::Approx(3e-3));
  CHECK(est.devices[1].busy_s == doctest::Approx(9e-3));
  CHECK(est.devices[2].busy_s == doctest::Approx(12e-3));
}

TEST_CASE("the DP all-reduce of the last backward's buckets delays the optimizer step") {
  // 2 replicas on 2 devices of one node; 1e9 parameters -> 2e9 gradient bytes in 10 buckets
  // of 2e8; each bucket's all-reduce on a 1e10 B/s ring of 2: 2e8 / 1e10 = 20 ms.
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e15),
                                             test::link(1e10, 0), test::link(1e10, 0));
  plan::Layer layer = millisecond_layer();
  layer.parameters = 1e9;
  const plan::Plan p =
      test::pipeline_plan(c, {layer}, plan::ScheduleKind::one_f_one_b, 1, 2, 1, 1);
  const plan::Estimate est = evaluate(p);
  // The first bucket is ready 1/10 into the 2 ms backward (at 1.2 ms); buckets then run back
  // to back: 1.2 ms + 10 * 20 ms. Optimizer: 1e9 * 30 bytes / 1e15 B/s = 30 us.
  CHECK(est.step_time_s == doctest::Approx(1.2e-3 + 0.2 + 3e-5));
  CHECK(est.breakdown.dp_comm_s == doctest::Approx(0.2));
  CHECK(est.breakdown.exposed_comm_s == doctest::Approx(0.2 + 1.2e-3 - 3e-3));
}

TEST_CASE("a timeline records every compute op on every device") {
  const plan::Cluster c = test::make_cluster(1, 4, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  const plan::Plan p = test::pipeline_plan(c, {millisecond_layer(), millisecond_layer()},
                                           plan::ScheduleKind::one_f_one_b, 3, 2, 2, 1);
  const plan::Estimate est = evaluate(p, true);
  int forwards = 0, backwards = 0;
  for (const plan::TimelineEvent& e : est.timeline) {
    forwards += e.name[0] == 'F';
    backwards += e.name[0] == 'B';
  }
  CHECK(forwards == 4 * 3);   // 4 devices x 3 micro-batches
  CHECK(backwards == 4 * 3);
  CHECK(evaluate(p).timeline.empty());
}

// File: test_engine.cpp
// Step times of tiny plans against hand-computed makespans: one device, textbook GPipe and
// 1F1B pipelines, zb-h1 against 1F1B, transfers, uneven shares across a bridge, DP gradient buckets overlapping the
// backward (under zb-h1: the weight passes) before the optimizer.
#include <doctest/doctest.h>

#include <string>
#include <vector>

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

/// One stage of two layers on 2 replicas, 1 sample each, one micro-batch: F 1 ms and B 2 ms
/// (1 ms input gradient, 1 ms weight gradient) per layer. 1e8 parameters a layer -> 2e8 bf16
/// gradient bytes; a 100 MiB (104857600 bytes) cap puts each layer in its own bucket: bucket
/// 0 = layer 1, bucket 1 = layer 0. Each all-reduce on a 1e10 B/s ring of 2: 2e8 / 1e10 = 20 ms.
plan::Plan two_bucket_plan(plan::ScheduleKind kind) {
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e15),
                                             test::link(1e10, 0), test::link(1e10, 0));
  plan::Layer layer = millisecond_layer();
  layer.parameters = 1e8;
  plan::Plan p = test::pipeline_plan(c, {layer}, kind, 1, 2, 1, 1);
  p.model.layers.push_back(layer);
  p.stages[0].end_layer = 2;
  p.gradient_bucket_mib = 100;
  return p;
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

TEST_CASE("zb-h1 vs 1f1b with F = B = W = 1 ms: (m + p - 1)(F+B+W) against m(F+B+W) + (p-1)(F+B-W)") {
  struct Case {
    int p, m;
    double one_f_one_b_ms, zb_h1_ms;
  };
  // p=2, m=4: 1f1b 5 x 3 = 15 ms, zb-h1 12 + 1 = 13 ms; p=4, m=8: 11 x 3 = 33, 24 + 3 = 27.
  for (const Case& k : {Case{2, 4, 15, 13}, Case{4, 8, 33, 27}}) {
    CAPTURE(k.p);
    const plan::Cluster c = test::make_cluster(1, k.p, test::flat_profile(1e14, 1e12),
                                               test::link(1e11, 0), test::link(1e10, 0));
    const std::vector<plan::Layer> layers(k.p, millisecond_layer());
    const plan::Estimate ofob =
        evaluate(test::pipeline_plan(c, layers, plan::ScheduleKind::one_f_one_b, k.m));
    const plan::Estimate zb =
        evaluate(test::pipeline_plan(c, layers, plan::ScheduleKind::zb_h1, k.m), true);
    CHECK(ofob.step_time_s == doctest::Approx(k.one_f_one_b_ms * 1e-3));
    CHECK(zb.step_time_s == doctest::Approx(k.zb_h1_ms * 1e-3));
    CHECK(zb.breakdown.compute_s == doctest::Approx(ofob.breakdown.compute_s));
    CHECK(zb.bubble_fraction == doctest::Approx((k.p - 1) / (k.zb_h1_ms)));
    // The last stage's last input pass is followed by p weight passes, W(m-p) .. W(m-1).
    std::vector<std::string> last_device;
    for (const plan::TimelineEvent& e : zb.timeline)
      if (e.device == k.p - 1 && e.lane == "compute") last_device.push_back(e.name);
    REQUIRE(last_device.size() == static_cast<size_t>(3 * k.m));
    const std::string last_stage = "s" + std::to_string(k.p - 1);
    CHECK(last_device.back() == "W " + last_stage + " mb" + std::to_string(k.m - 1));
    CHECK(last_device[last_device.size() - k.p - 1] == "B " + last_stage + " mb" + std::to_string(k.m - 1));
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

TEST_CASE("one bucket: its all-reduce starts when the last backward ends") {
  // 2 replicas on 2 devices of one node; 1e9 parameters -> 2e9 bf16 gradient bytes, more than
  // the 25 MiB cap but one layer, so one bucket; its all-reduce on a 1e10 B/s ring of 2:
  // 2e9 / 1e10 = 200 ms.
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e15),
                                             test::link(1e10, 0), test::link(1e10, 0));
  plan::Layer layer = millisecond_layer();
  layer.parameters = 1e9;
  const plan::Plan p =
      test::pipeline_plan(c, {layer}, plan::ScheduleKind::one_f_one_b, 1, 2, 1, 1);
  const plan::Estimate est = evaluate(p);
  // F 1 ms, B 2 ms, then 200 ms. Optimizer: 1e9 * 30 bytes / 1e15 B/s = 30 us.
  CHECK(est.step_time_s == doctest::Approx(3e-3 + 0.2 + 3e-5));
  CHECK(est.breakdown.dp_comm_s == doctest::Approx(0.2));  // per device
  CHECK(est.breakdown.exposed_comm_s == doctest::Approx(0.2));
}

TEST_CASE("two layers, two buckets: the first reduces while the second layer's backward runs") {
  plan::Plan p = two_bucket_plan(plan::ScheduleKind::one_f_one_b);
  // F 0-2 ms; B of layer 1 2-4 ms, so bucket 0 reduces 4-24 ms; B of layer 0 ends at 6 ms,
  // bucket 1 waits for the stream: 24-44 ms. Optimizer: 2e8 * 30 bytes / 1e15 B/s = 6 us.
  const plan::Estimate est = evaluate(p, true);
  CHECK(est.step_time_s == doctest::Approx(44e-3 + 6e-6));
  CHECK(est.breakdown.dp_comm_s == doctest::Approx(40e-3));  // per device
  CHECK(est.breakdown.exposed_comm_s == doctest::Approx(38e-3));
  int buckets = 0;
  for (const plan::TimelineEvent& e : est.timeline) {
    if (e.lane != "dp" || e.device != 0) continue;
    CAPTURE(e.name);
    CHECK(e.name == (buckets == 0 ? "reduce_bucket s0 b0" : "reduce_bucket s0 b1"));
    CHECK(e.start_s == doctest::Approx(buckets == 0 ? 4e-3 : 24e-3));
    CHECK(e.duration_s == doctest::Approx(20e-3));
    ++buckets;
  }
  CHECK(buckets == 2);
  // With one bucket for both layers it would start at 6 ms and end at 46 ms.
  p.gradient_bucket_mib = 400;
  CHECK(evaluate(p).step_time_s == doctest::Approx(46e-3 + 6e-6));
}

TEST_CASE("zb-h1: each gradient bucket reduces once the last weight pass has passed its layers") {
  // F 0-2 ms, B (input passes of layers 1 and 0) 2-4 ms, W of layer 1 4-5 ms -> bucket 0
  // reduces 5-25 ms; W of layer 0 5-6 ms, bucket 1 waits for the stream: 25-45 ms.
  // Optimizer: 2e8 * 30 bytes / 1e15 B/s = 6 us.
  const plan::Estimate est = evaluate(two_bucket_plan(plan::ScheduleKind::zb_h1), true);
  CHECK(est.step_time_s == doctest::Approx(45e-3 + 6e-6));
  std::vector<double> starts;
  for (const plan::TimelineEvent& e : est.timeline)
    if (e.lane == "dp" && e.device == 0) starts.push_back(e.start_s);
  REQUIRE(starts.size() == 2);
  CHECK(starts[0] == doctest::Approx(5e-3));
  CHECK(starts[1] == doctest::Approx(25e-3));
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

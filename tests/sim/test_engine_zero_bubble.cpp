// File: test_engine_zero_bubble.cpp
// zb-h1 in the simulator, by hand: step times against 1f1b with unit costs, the gradient buckets
// after the weight passes that complete them, and the bytes held from input to weight pass.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "whale/sim/memory_model.h"
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

// One GEMM of 1 ms forward per sample (1e11 flops at 1e14 flop/s): its backward is 1 ms of
// input gradient (B) and 1 ms of weight gradient (W). Nothing else costs time.
plan::Layer millisecond_layer() { return test::gemm_layer(1e5, 1e3, 5e2, 0); }

}  // namespace

TEST_CASE("op costs: the weight pass is the weight-gradient GEMMs, the attention core has none") {
  plan::Layer layer = millisecond_layer();
  const plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
  LayerCost cost = layer_cost(layer, profile, plan::Precision::bf16, 1, 1, plan::Recompute::none);
  CHECK(cost.backward_s == doctest::Approx(2e-3 + 2 * profile.kernel_launch_s));
  CHECK(cost.backward_weight_s == doctest::Approx(1e-3 + profile.kernel_launch_s));
  layer.gemms.push_back(plan::GemmOp{"attention_scores", 1e5, 1e3, 5e2, 1, true});
  cost = layer_cost(layer, profile, plan::Precision::bf16, 1, 1, plan::Recompute::none);
  CHECK(cost.backward_s == doctest::Approx(4e-3 + 4 * profile.kernel_launch_s));
  CHECK(cost.backward_weight_s == doctest::Approx(1e-3 + profile.kernel_launch_s));
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

TEST_CASE("zb-h1: each gradient bucket reduces once the last weight pass has passed its layers") {
  // One stage of two 1 ms layers on 2 replicas, one bucket per layer (as test_engine.cpp):
  // F 0-2 ms, B 2-4 ms, W of layer 1 4-5 ms -> bucket 0 reduces 5-25 ms; W of layer 0 5-6 ms,
  // bucket 1 waits for the stream: 25-45 ms. Optimizer: 2e8 * 30 bytes / 1e15 B/s = 6 us.
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e15),
                                             test::link(1e10, 0), test::link(1e10, 0));
  plan::Layer layer = millisecond_layer();
  layer.parameters = 1e8;
  plan::Plan p = test::pipeline_plan(c, {layer}, plan::ScheduleKind::zb_h1, 1, 2, 1, 1);
  p.model.layers.push_back(layer);
  p.stages[0].end_layer = 2;
  p.gradient_bucket_mib = 100;
  const plan::Estimate est = evaluate(p, true);
  CHECK(est.step_time_s == doctest::Approx(45e-3 + 6e-6));
  std::vector<double> starts;
  for (const plan::TimelineEvent& e : est.timeline)
    if (e.lane == "dp" && e.device == 0) starts.push_back(e.start_s);
  REQUIRE(starts.size() == 2);
  CHECK(starts[0] == doctest::Approx(5e-3));
  CHECK(starts[1] == doctest::Approx(25e-3));
}

TEST_CASE("the weight pass keeps each weight GEMM's input and output gradient") {
  // fc: m = n = k = 10, tp-split: input 100 and output gradient 100 elements; at tp 2 one of
  // them is split: 150 bf16 elements = 300 bytes; not split, 400. The attention core adds none.
  plan::Layer layer = test::gemm_layer(10, 10, 10, 0, 1000);
  CHECK(weight_pass_bytes(layer, 2, plan::Precision::bf16) == 300);
  CHECK(weight_pass_bytes(layer, 1, plan::Precision::fp32) == 800);
  layer.gemms.push_back(plan::GemmOp{"attention_context", 10, 10, 10, 4, true});
  CHECK(weight_pass_bytes(layer, 2, plan::Precision::bf16) == 300);
  layer.gemms[0].tp_split = false;
  CHECK(weight_pass_bytes(layer, 2, plan::Precision::bf16) == 400);
}

TEST_CASE("zb-h1 memory by hand: activations free at B, the weight pass's bytes until W") {
  // Two stages of dp 2 x tp 2, 4 micro-batches of 3 samples per replica (test_memory_model's
  // plan). Per micro-batch: kept 3 * (10 + 60/2) = 120 bytes, held for W 3 * 300 = 900.
  const plan::Cluster c = test::make_cluster(1, 8, test::flat_profile(1e14, 1e12, 1e9),
                                             test::link(1e11, 0), test::link(1e10, 0));
  plan::Layer layer = test::gemm_layer(10, 10, 10, 0, 1000);
  layer.parameters_replicated = 100;
  layer.activation_bytes_replicated = 10;
  layer.activation_bytes_split = 40;
  layer.activation_bytes_attention = 20;
  const plan::Plan p =
      test::pipeline_plan(c, {layer, layer}, plan::ScheduleKind::zb_h1, 4, 4, 2, 3);
  SimulatorOptions options;
  options.workspace_bytes = 1000;
  const plan::Estimate est = Simulator(options).evaluate(p, {});
  const double state = 1100 + 1100 + 6600 + 1000;
  // Group 0: F0 F1 B0 W0 ... peaks at B0: 240 - 120 + 900 = 1020.
  CHECK(est.devices[0].peak_memory_bytes == doctest::Approx(state + 1020));
  // Group 1: F0 B0 F1 B1 W0 ... peaks at B1: 2 x 900 = 1800, two micro-batches in flight.
  CHECK(est.devices[4].peak_memory_bytes == doctest::Approx(state + 1800));
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  CHECK(peak_in_flight(program.groups[0], 0) == 2);
  CHECK(peak_in_flight(program.groups[1], 1) == 2);
}

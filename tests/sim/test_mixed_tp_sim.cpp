// File: test_mixed_tp_sim.cpp
// A stage whose replicas run at different tp (replica_tp [1, 2] on three devices of one node):
// each replica computes at its own tp, the slowest sets the pace, each finest shard of the
// gradients is all-reduced among the devices holding it, and memory is per replica's tp.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>

#include "sim_fixtures.h"
#include "whale/plan/framework_precision.h"
#include "whale/plan/planner.h"
#include "whale/plan/search_mixed_tp.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

// One node of 3 devices (1e14 flop/s, links 1e10 B/s, no latency), one stage of one layer, one
// micro-batch of 2 samples: replica 0 (device 0) at tp 1 and replica 1 (devices 1, 2) at tp 2,
// one sample each. Per sample the layer's GEMM is 2 x 1e5 x 1e3 x 5e2 = 1e11 flops, and the
// tp-2 replica all-reduces 1e8 bytes per pass (2 x (1/2) x 1e8 / 1e10 = 10 ms). `parameters`
// are all split (none replicated). Memory bandwidth is so high that the optimizer takes ~0 s.
plan::Plan mixed_plan(double parameters) {
  const plan::Cluster c = test::make_cluster(1, 3, test::flat_profile(1e14, 1e20, 1e15),
                                             test::link(1e10, 0), test::link(1e10, 0));
  plan::Layer layer = test::gemm_layer(1e5, 1e3, 5e2, 0, parameters);
  layer.tp_allreduce_bytes = 1e8;
  plan::Plan p = test::pipeline_plan(c, {layer}, plan::ScheduleKind::one_f_one_b, 1, 3, 1, 1);
  p.stages[0].tp = 2;
  p.stages[0].replica_tps = {1, 2};
  p.stages[0].shares = {1, 1};
  p.micro_batch_size = 2;
  plan::validate_plan(p);
  return p;
}

plan::Estimate evaluate(const plan::Plan& p) { return Simulator(SimulatorOptions{}).evaluate(p, {}); }

}  // namespace

TEST_CASE("the slowest replica of a mixed-tp stage sets its pace") {
  // Replica 0: forward 1 ms, backward 2 ms. Replica 1 (tp 2): forward 0.5 ms + 10 ms, backward
  // 1 ms + 10 ms: 21.5 ms. Nothing to exchange without parameters.
  const plan::Estimate est = evaluate(mixed_plan(0));
  CHECK(est.step_time_s == doctest::Approx(21.5e-3));
  REQUIRE(est.devices.size() == 3);
  CHECK(est.devices[0].busy_s == doctest::Approx(3e-3));
  CHECK(est.devices[1].busy_s == doctest::Approx(21.5e-3));
  CHECK(est.devices[2].busy_s == doctest::Approx(21.5e-3));
}

TEST_CASE("each finest gradient shard is all-reduced among the devices holding it") {
  const plan::Plan p = mixed_plan(1e9);
  const double bytes = plan::gradient_bytes_per_element(p.precision, p.framework_precision);
  // Two pieces of 1e9 / 2 parameters: piece 0 on devices {0, 1}, piece 1 on {0, 2}. Each
  // all-reduce of two ranks on one node moves 2 x (1/2) x piece bytes / 1e10; device 0 holds
  // both pieces and runs both, after the slower replica's backward (21.5 ms).
  const double piece_s = 2 * 0.5 * (1e9 / 2 * bytes) / 1e10;
  const plan::Estimate est = evaluate(p);
  CHECK(est.step_time_s == doctest::Approx(21.5e-3 + 2 * piece_s));
  // Memory at each replica's tp: device 0 holds every parameter, devices 1 and 2 half of them.
  CHECK(est.devices[0].tensor_memory_bytes == doctest::Approx(2 * est.devices[1].tensor_memory_bytes));
  CHECK(est.devices[1].tensor_memory_bytes == doctest::Approx(est.devices[2].tensor_memory_bytes));
}

TEST_CASE("a uniform stage of the same devices exchanges one shard per device") {
  // replica_tp [1, 1, 1] is uniform tp 1: three one-piece all-reduces run at once, each of all
  // 1e9 parameters over three ranks: 2 x (2/3) x bytes / 1e10, after a 3 ms compute pass.
  plan::Plan p = mixed_plan(1e9);
  p.stages[0].tp = 1;
  p.stages[0].replica_tps = {1, 1, 1};
  p.stages[0].shares = {1, 1, 1};
  p.micro_batch_size = 3;
  plan::validate_plan(p);
  const double bytes = plan::gradient_bytes_per_element(p.precision, p.framework_precision);
  const plan::Estimate mixed_form = evaluate(p);
  CHECK(mixed_form.step_time_s == doctest::Approx(3e-3 + 2 * (2.0 / 3) * 1e9 * bytes / 1e10));
  p.stages[0].replica_tps.clear();
  CHECK(evaluate(p).step_time_s == doctest::Approx(mixed_form.step_time_s));
}

TEST_CASE("A100s at tp 1 next to V100s at tp 4 beat tp 4 everywhere") {
  // configs/plans/a100-v100-gpt3-1.3b-mixed-tp.yaml: GPT-3 1.3B on 8 A100-40GB and 8 V100-16GB.
  // A V100 holds the model only at tp 4 or more; at tp 4 everywhere the A100s pay the tp
  // all-reduces and quarter-size GEMMs too. At tp 1 they pay neither, so the mixed layout is
  // faster than the uniform one at any of its shares (the best of them, [11, 11, 5, 5], here).
  const plan::Plan mixed = plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/a100-v100-gpt3-1.3b-mixed-tp.yaml");
  plan::Plan uniform = mixed;
  uniform.stages[0].replica_tps.clear();
  uniform.stages[0].tp = 4;
  uniform.stages[0].shares = {11, 11, 5, 5};
  plan::validate_plan(uniform);
  const plan::Estimate fast = evaluate(mixed);
  const plan::Estimate slow = evaluate(uniform);
  CHECK(fast.fits);
  CHECK(slow.fits);
  CHECK(fast.step_time_s < 0.95 * slow.step_time_s);
  // The search's variants of the uniform plan hold this layout (search_mixed_tp.h).
  bool found = false;
  for (const plan::Plan& v : plan::mixed_tp_variants(uniform, 16))
    found = found || (v.stages[0].replica_tps == mixed.stages[0].replica_tps && v.stages[0].shares == mixed.stages[0].shares);
  CHECK(found);
}

namespace {

// The simulator, counting the mixed-tp plans it is asked about.
struct CountingSimulator : plan::CostModel {
  Simulator simulator;
  mutable std::atomic<int> mixed_plans{0};
  static bool mixed(const plan::Plan& p) {
    return std::any_of(p.stages.begin(), p.stages.end(), [](const plan::Stage& s) { return s.mixed_tp(); });
  }
  plan::Estimate evaluate(const plan::Plan& p, const plan::EvaluateOptions& o) const override {
    if (mixed(p)) ++mixed_plans;
    return simulator.evaluate(p, o);
  }
  plan::StepBound bound(const plan::Plan& p) const override {
    if (mixed(p)) ++mixed_plans;
    return simulator.bound(p);
  }
};

}  // namespace

TEST_CASE("whale-plan's search weighs mixed-tp variants of a group that mixes models") {
  // One A100 node and one V100 node of the shipped cluster, one device group (depth 1): every
  // group mixes the two models, so the search asks the cost model about the best plan's
  // mixed-tp variants (a bound, then a simulation unless the bound rules it out) and ranks
  // those that fit with the rest; whichever is fastest is the best plan.
  const plan::Cluster cluster = plan::load_cluster(std::string(WHALE_SOURCE_DIR) + "/configs/clusters/a100-v100.yaml");
  plan::Model model = plan::load_model(std::string(WHALE_SOURCE_DIR) + "/configs/models/gpt3-1.3b.yaml");
  plan::generate_layers(model, plan::Precision::fp16);
  model.training.precision = plan::Precision::fp16;
  plan::PlannerOptions options;
  options.global_batch = 768;
  options.top_k = 100;
  options.compare = false;
  options.hints.max_pipeline_depth = 1;
  for (int d = 8; d < 64; ++d)
    if (d < 16 || d >= 24) options.hints.exclude_devices.push_back(d);
  const CountingSimulator cost;
  const plan::PlanResult result = plan::search_plans(cluster, model, cost, options);
  CHECK(cost.mixed_plans > 0);
  for (const plan::RankedPlan& r : result.ranked) {
    if (!CountingSimulator::mixed(r.plan)) continue;
    CHECK(r.label.find("mixed-tp") != std::string::npos);
    CHECK(r.estimate.fits);
    CHECK(r.estimate.step_time_s >= result.best().estimate.step_time_s);
  }
}

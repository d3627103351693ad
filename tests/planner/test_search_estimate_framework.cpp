// File: test_search_estimate_framework.cpp
// The planner's quick memory estimate reads a device model's framework and calibration figures
// as the simulator's memory model does: the attention implementation, dropout masks kept or
// drawn again, the calibrated activation scale, the fp32 gradient copy and the buckets' copy,
// what recomputation holds again in a backward, with the same bytes and the same verdict.
#include <doctest/doctest.h>

#include "../sim/sim_fixtures.h"
#include "whale/plan/schedule_program.h"
#include "whale/plan/search_estimate.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

// One bf16 Adam layer of 1000 parameters whose attention core has 100 score elements in 10 rows
// per sample (a s² and a s) with dropout: 10 replicated and 40 split activation bytes per
// sample; the fused softmax keeps 5 bytes per score (500), flash one fp32 per row (40). One
// device of `capacity_bytes`, one stage, one micro-batch of 2 samples (GPipe).
plan::Plan attention_plan(double capacity_bytes) {
  plan::Layer layer = sim::test::gemm_layer(10, 10, 10, 0, 1000);
  layer.activation_bytes_replicated = 10;
  layer.activation_bytes_split = 40;
  layer.attention_score_elements = 100;
  layer.attention_rows = 10;
  layer.attention_dropout = true;
  layer.activation_bytes_attention = 500;
  const plan::Cluster c = sim::test::make_cluster(1, 1, sim::test::flat_profile(1e14, 1e12, capacity_bytes),
                                                  sim::test::link(1e11, 0), sim::test::link(1e10, 0));
  plan::Plan p = sim::test::pipeline_plan(c, {layer}, plan::ScheduleKind::gpipe, 1, 1, 1, 2);
  p.model.training.precision = plan::Precision::bf16;
  p.model.training.optimizer = "adam";
  return p;
}

plan::DeviceProfile& profile_of(plan::Plan& p) { return p.cluster.profiles.at("flat"); }

// The estimate of the plan's one device: layer 0, tp 1, dp 1, 2 samples, 1 micro-batch.
plan::MemoryNeed estimate(const plan::Plan& p) {
  const plan::AnalyticModel analytic(p.cluster, p.model);
  return analytic.memory("flat", 0, 1, 1, 1, 2, 1, plan::Recompute::none, false);
}

bool estimate_fits(const plan::Plan& p) {
  const plan::AnalyticModel analytic(p.cluster, p.model);
  return estimate(p).total() <= analytic.usable_bytes("flat");
}

// The simulator's figures for the same device.
sim::MemoryBreakdown simulated(const plan::Plan& p) {
  return sim::replica_memory(p, plan::generate_schedule(p).groups[0], 0);
}

bool simulator_fits(const plan::Plan& p) {
  return sim::Simulator().evaluate(p, plan::EvaluateOptions{}).fits;
}

}  // namespace

TEST_CASE("quick estimate: flash attention drops the s² bytes, a scale of 0.5 halves the activations, as simulated") {
  plan::Plan p = attention_plan(80e9);
  // Defaults (fused softmax, scale 1, no fp32 copy): (10 + 40 + 500) x 2 samples = 1100 bytes
  // of activations; 1000 parameters x (2 weights + 2 gradients + 12 Adam) = 16000 of state.
  const plan::MemoryNeed fused = estimate(p);
  CHECK(fused.activation_bytes == 1100);
  CHECK(fused.state_bytes == 16000);
  CHECK(fused.activation_bytes == simulated(p).activations_bytes);
  // Flash keeps 40 bytes of row statistics for the 500 bytes of scores: (10 + 40 + 40) x 2.
  profile_of(p).framework_memory.attention = plan::AttentionImplementation::flash;
  const plan::MemoryNeed flash = estimate(p);
  CHECK(flash.activation_bytes == 180);
  CHECK(fused.activation_bytes - flash.activation_bytes == (500 - 40) * 2);
  CHECK(flash.state_bytes == 16000);
  CHECK(flash.activation_bytes == simulated(p).activations_bytes);
  // The calibrated scale multiplies the activations only.
  profile_of(p).framework_memory.attention = plan::AttentionImplementation::fused_softmax;
  profile_of(p).calibration.activation_memory_scale = 0.5;
  const plan::MemoryNeed scaled = estimate(p);
  CHECK(scaled.activation_bytes == 550);
  CHECK(scaled.state_bytes == 16000);
  CHECK(scaled.activation_bytes == simulated(p).activations_bytes);
}

TEST_CASE("quick estimate: masks drawn again leave out the hidden masks and the attention dropout's, as simulated") {
  plan::Plan p = attention_plan(80e9);
  p.model.layers[0].dropout_mask_bytes = 4;  // of the 10 replicated bytes
  profile_of(p).framework_memory.dropout_masks_kept = false;
  // (10 - 4 + 40 + 200) x 2 samples: the fused softmax keeps its bf16 output alone, 2 bytes a score.
  const plan::MemoryNeed drawn = estimate(p);
  CHECK(drawn.activation_bytes == (6 + 40 + 200) * 2);
  CHECK(drawn.activation_bytes == simulated(p).activations_bytes);
  // Full recomputation rebuilds the layer without its masks: input bytes plus that layer.
  p.model.layers[0].input_bytes = 8;
  p.stages[0].recompute = plan::Recompute::full;
  const plan::AnalyticModel analytic(p.cluster, p.model);
  const plan::MemoryNeed full = analytic.memory("flat", 0, 1, 1, 1, 2, 1, plan::Recompute::full, false);
  CHECK(full.activation_bytes == (8 + 6 + 40 + 200) * 2);
  CHECK(full.activation_bytes == simulated(p).activations_bytes);
}

TEST_CASE("quick estimate: what recomputation holds again in a layer's backward, as simulated") {
  // The attention layer at tp 2 on two devices, 2 samples a micro-batch, without sequence
  // parallelism (a sequence of 1 does not divide by 2), 20 input bytes per sample.
  plan::Plan p = attention_plan(80e9);
  p.cluster = sim::test::make_cluster(1, 2, sim::test::flat_profile(1e14, 1e12, 80e9), sim::test::link(1e11, 0),
                                      sim::test::link(1e10, 0));
  p.model.layers[0].input_bytes = 20;
  p.stages[0].tp = 2;
  p.stages[0].devices = {0, 1};
  p.stages[0].shares = {2};
  const plan::AnalyticModel analytic(p.cluster, p.model);
  auto estimated = [&](plan::Recompute r) {
    return analytic.memory("flat", 0, 1, 2, 1, 2, 1, r, false).activation_bytes;
  };
  auto simulated_as = [&](plan::Recompute r) {
    p.stages[0].recompute = r;
    return simulated(p).activations_bytes;
  };
  // Kept: the replicated 10, the split 40 and the scores 500 per sample, the last two over tp.
  CHECK(estimated(plan::Recompute::none) == (10 + 540 / 2) * 2);
  CHECK(simulated_as(plan::Recompute::none) == (10 + 540 / 2) * 2);
  // Selective keeps 10 + 40 / 2 and re-runs the attention core in the backward, its 500 / 2
  // bytes of scores held again meanwhile.
  CHECK(estimated(plan::Recompute::selective) == (10 + 20 + 250) * 2);
  CHECK(simulated_as(plan::Recompute::selective) == (10 + 20 + 250) * 2);
  // Full keeps the input (20) and rebuilds the whole layer in the backward: the replicated 10
  // (not sharded without sequence parallelism) and 540 / 2.
  CHECK(estimated(plan::Recompute::full) == (20 + 10 + 270) * 2);
  CHECK(simulated_as(plan::Recompute::full) == (20 + 10 + 270) * 2);
}

TEST_CASE("quick estimate: the fp32 gradient copy adds 4 bytes per parameter the optimizer steps, as simulated") {
  plan::Plan p = attention_plan(80e9);
  profile_of(p).framework_memory.fp32_gradient_copy = true;
  const plan::MemoryNeed need = estimate(p);
  CHECK(need.state_bytes == 1000 * (2 + 2 + 12 + 4));
  const sim::MemoryBreakdown m = simulated(p);
  CHECK(need.state_bytes == m.weights_bytes + m.gradients_bytes + m.optimizer_bytes);
  // fp32 gradients need no copy.
  p.model.training.framework_precision.grad_reduce = plan::GradReducePrecision::fp32;
  CHECK(estimate(p).state_bytes == 1000 * (2 + 4 + 12));
}

TEST_CASE("quick estimate: the same memory verdict as the simulator under each framework figure") {
  // 17000 bytes: the defaults need 16000 + 1100 and do not fit; flash (16000 + 180) and a
  // scale of 0.5 (16000 + 550) fit.
  plan::Plan p = attention_plan(17000);
  CHECK_FALSE(estimate_fits(p));
  CHECK_FALSE(simulator_fits(p));
  profile_of(p).framework_memory.attention = plan::AttentionImplementation::flash;
  CHECK(estimate_fits(p));
  CHECK(simulator_fits(p));
  profile_of(p).framework_memory.attention = plan::AttentionImplementation::fused_softmax;
  profile_of(p).calibration.activation_memory_scale = 0.5;
  CHECK(estimate_fits(p));
  CHECK(simulator_fits(p));
  // 17500 bytes: the defaults fit; a scale of 1.5 (16000 + 1650) and the fp32 gradient copy
  // (20000 + 1100) do not.
  p = attention_plan(17500);
  CHECK(estimate_fits(p));
  CHECK(simulator_fits(p));
  profile_of(p).calibration.activation_memory_scale = 1.5;
  CHECK_FALSE(estimate_fits(p));
  CHECK_FALSE(simulator_fits(p));
  profile_of(p).calibration.activation_memory_scale = 1.0;
  profile_of(p).framework_memory.fp32_gradient_copy = true;
  CHECK_FALSE(estimate_fits(p));
  CHECK_FALSE(simulator_fits(p));
}

TEST_CASE("quick estimate: PyTorch's cross-entropy buffers as simulated; freed gradients kept as a bound") {
  plan::Plan p = attention_plan(80e9);
  p.model.layers[0].logit_elements = 10;  // a head's s v per sample
  profile_of(p).framework_memory.cross_entropy = plan::CrossEntropyImplementation::pytorch;
  // (10 + 40 + 500 + 8 x 10 bytes of the loss's backward) x 2 samples.
  CHECK(estimate(p).activation_bytes == 1260);
  CHECK(estimate(p).activation_bytes == simulated(p).activations_bytes);
  // Gradients freed after each step: the simulator's peak is then the optimizer step's, 2000
  // bytes of gradients beside the weights and Adam (16000), above the forward's 14000 + 1260;
  // the estimate keeps counting the gradients with the activations: at or above the simulator.
  profile_of(p).framework_memory.gradients_freed_after_step = true;
  const sim::MemoryBreakdown m = simulated(p);
  CHECK(m.gradients_bytes == 2000);
  CHECK(m.activations_bytes == 0);
  CHECK(m.tensor_bytes() == 16000);
  CHECK(estimate(p).total() == 16000 + 1260);
}

namespace {
/// The attention plan's layer on two devices, dp 2, one sample each.
plan::Plan two_replica_attention_plan() {
  plan::Plan p = attention_plan(80e9);
  p.cluster = sim::test::make_cluster(1, 2, sim::test::flat_profile(1e14, 1e12, 80e9), sim::test::link(1e11, 0),
                                      sim::test::link(1e10, 0));
  p.stages[0].devices = {0, 1};
  p.stages[0].shares = {1, 1};
  return p;
}
}  // namespace

TEST_CASE("quick estimate: DDP's gradient bucket copy holds the gradients again under data parallelism, as simulated") {
  plan::Plan p = two_replica_attention_plan();
  profile_of(p).framework_memory.gradient_bucket_copy = true;
  const plan::AnalyticModel analytic(p.cluster, p.model);
  const auto state = [&](int dp, bool shard_gradients) {
    return analytic.memory("flat", 0, 1, 1, dp, 1, 1, plan::Recompute::none, false, shard_gradients).state_bytes;
  };
  // 1000 parameters x (2 weights + 2 gradients + 12 Adam) and the buckets' 2 bytes per gradient.
  CHECK(state(2, false) == 1000 * (2 + 2 + 12 + 2));
  const sim::MemoryBreakdown m = simulated(p);
  CHECK(m.gradient_bucket_bytes == 2000);
  CHECK(state(2, false) == m.weights_bytes + m.gradients_bytes + m.gradient_bucket_bytes + m.optimizer_bytes);
  // One replica reduces nothing; sharded gradients (ZeRO-2) are reduced without the copy.
  CHECK(state(1, false) == 1000 * (2 + 2 + 12));
  CHECK(state(2, true) == 1000 * (2 + 1 + 12));
}

TEST_CASE("quick estimate: ZeRO's gradients and master weights held whole, as simulated") {
  // Two replicas under ZeRO-2: 1000 parameters, bf16 Adam with fp32 master weights (2 weights
  // + 2 gradients + 4 master + 8 m and v bytes each).
  plan::Plan p = two_replica_attention_plan();
  p.stages[0].shard_optimizer = p.stages[0].shard_gradients = true;
  const auto state = [&] {
    const plan::AnalyticModel analytic(p.cluster, p.model);
    return analytic.memory("flat", 0, 1, 1, 2, 1, 1, plan::Recompute::none, true, true).state_bytes;
  };
  const auto simulated_state = [&] {
    const sim::MemoryBreakdown m = simulated(p);
    return m.weights_bytes + m.gradients_bytes + m.gradient_bucket_bytes + m.optimizer_bytes;
  };
  CHECK(state() == 1000 * (2 + 2.0 / 2 + 12.0 / 2));  // DeepSpeed's ZeRO-2: pieces only
  CHECK(state() == simulated_state());
  profile_of(p).framework_memory.sharded_gradients_held_whole = true;
  CHECK(state() == 1000 * (2 + 2 + 12.0 / 2));
  CHECK(state() == simulated_state());
  profile_of(p).framework_memory.master_weights_held_whole = true;  // whale-run
  CHECK(state() == 1000 * (2 + 2 + 4 + 8.0 / 2));
  CHECK(state() == simulated_state());
}

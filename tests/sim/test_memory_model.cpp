// File: test_memory_model.cpp
// Memory per device by hand: state bytes per parameter, tp sharding of parameters, optimizer
// sharding, activations in flight under 1F1B with each recomputation mode and under zb-h1, the
// framework's reserve, allocator slack and flash attention, out of memory.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/plan/error.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

// Two stages of dp 2 x tp 2 on one node of 8; 1F1B over 4 micro-batches of 3 samples per
// replica. A layer: 1000 parameters (100 replicated), activations 10 replicated + 40 split +
// 20 attention bytes per sample, input 8 bytes per sample.
plan::Plan memory_plan(plan::Recompute recompute, bool shard, double capacity_bytes) {
  const plan::Cluster c = test::make_cluster(1, 8, test::flat_profile(1e14, 1e12, capacity_bytes),
                                             test::link(1e11, 0), test::link(1e10, 0));
  plan::Layer layer = test::gemm_layer(10, 10, 10, 0, 1000);
  layer.parameters_replicated = 100;
  layer.activation_bytes_replicated = 10;
  layer.activation_bytes_split = 40;
  layer.activation_bytes_attention = 20;
  layer.input_bytes = 8;
  plan::Plan p = test::pipeline_plan(c, {layer, layer}, plan::ScheduleKind::one_f_one_b, 4, 4, 2, 3);
  for (plan::Stage& s : p.stages) {
    s.recompute = recompute;
    s.shard_optimizer = shard;
  }
  // The framework holds a fixed 1000 bytes besides the tensors.
  for (auto& [name, profile] : p.cluster.profiles) profile.framework_memory.reserve_bytes = 1000;
  return p;
}

plan::Estimate evaluate(const plan::Plan& p) { return Simulator().evaluate(p, {}); }

plan::FrameworkMemory& framework_of(plan::Plan& p) {
  return p.cluster.profiles.begin()->second.framework_memory;
}

}  // namespace

TEST_CASE("state bytes per parameter: mixed-precision Adam 16, fp32 Adam 16, SGD less") {
  const StateBytesPerParam mixed = state_bytes_per_param(plan::Precision::bf16, "adamw");
  CHECK(mixed.weights + mixed.gradients + mixed.optimizer == 16);
  CHECK(mixed.optimizer == 12);
  const StateBytesPerParam fp32 = state_bytes_per_param(plan::Precision::fp32, "adam");
  CHECK(fp32.weights == 4);
  CHECK(fp32.optimizer == 8);
  CHECK(state_bytes_per_param(plan::Precision::fp16, "sgd").optimizer == 8);
  CHECK_THROWS_WITH_AS(state_bytes_per_param(plan::Precision::bf16, "lamb"),
                       doctest::Contains("training.optimizer"), Error);
}

TEST_CASE("1F1B keeps p - group micro-batches in flight") {
  const plan::ScheduleProgram prog =
      plan::generate_schedule(plan::ScheduleKind::one_f_one_b, 4, 1, 8);
  CHECK(peak_in_flight(prog.groups[0], 0) == 4);
  CHECK(peak_in_flight(prog.groups[3], 3) == 1);
  const plan::ScheduleProgram gpipe = plan::generate_schedule(plan::ScheduleKind::gpipe, 4, 1, 8);
  CHECK(peak_in_flight(gpipe.groups[3], 3) == 8);
}

TEST_CASE("memory of a tiny plan by hand, for each recomputation mode") {
  // Per device: 900/2 + 100 = 550 parameters: weights 1100, gradients 1100, optimizer 6600.
  // Kept per micro-batch (3 samples): none 3*(10 + 60/2) = 120, selective 3*(40 - 10) = 90,
  // full 3*8 = 24. While recomputing one layer: full 120, selective its attention 3*20/2 = 30.
  // Group 0 holds 2 micro-batches in flight, group 1 one.
  const double state = 1100 + 1100 + 6600 + 1000;
  const plan::Estimate none = evaluate(memory_plan(plan::Recompute::none, false, 1e9));
  CHECK(none.devices[0].peak_memory_bytes == doctest::Approx(state + 240));
  CHECK(none.devices[7].peak_memory_bytes == doctest::Approx(state + 120));
  const plan::Estimate sel = evaluate(memory_plan(plan::Recompute::selective, false, 1e9));
  CHECK(sel.devices[0].peak_memory_bytes == doctest::Approx(state + 180 + 30));
  const plan::Estimate full = evaluate(memory_plan(plan::Recompute::full, false, 1e9));
  CHECK(full.devices[0].peak_memory_bytes == doctest::Approx(state + 48 + 120));
  CHECK(full.devices[4].peak_memory_bytes == doctest::Approx(state + 24 + 120));
  // ZeRO-1 over dp 2 halves the optimizer state.
  const plan::Estimate sharded = evaluate(memory_plan(plan::Recompute::none, true, 1e9));
  CHECK(sharded.devices[0].peak_memory_bytes == doctest::Approx(state - 3300 + 240));
}

TEST_CASE("out of memory: fits is false once a device's peak exceeds its capacity") {
  const double group0_peak_bytes = 1100 + 1100 + 6600 + 1000 + 240;
  CHECK(evaluate(memory_plan(plan::Recompute::none, false, group0_peak_bytes)).fits);
  const plan::Estimate oom =
      evaluate(memory_plan(plan::Recompute::none, false, group0_peak_bytes - 1));
  CHECK_FALSE(oom.fits);
  CHECK(oom.devices[0].peak_memory_bytes > oom.devices[0].capacity_bytes);
  CHECK(oom.devices[7].peak_memory_bytes <= oom.devices[7].capacity_bytes);
}

TEST_CASE("ZeRO-2 shards the gradients as well, each replica holding its piece of the flat buffer") {
  // 550 parameters per device over dp 2: pieces of 275. Gradients 1100 -> 550, optimizer
  // 6600 -> 3300.
  plan::Plan p = memory_plan(plan::Recompute::none, true, 1e9);
  for (plan::Stage& s : p.stages) s.shard_gradients = true;
  const double state = 1100 + 550 + 3300 + 1000;
  CHECK(evaluate(p).devices[0].peak_memory_bytes == doctest::Approx(state + 240));
}

TEST_CASE("flat shards: pieces of ceil(n / members), the last ones shorter or empty") {
  CHECK(flat_shard_elements(10, 4, 0) == 3);
  CHECK(flat_shard_elements(10, 4, 2) == 3);
  CHECK(flat_shard_elements(10, 4, 3) == 1);
  CHECK(flat_shard_elements(5, 4, 2) == 1);
  CHECK(flat_shard_elements(5, 4, 3) == 0);
  CHECK(flat_shard_elements(7, 1, 0) == 7);
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

TEST_CASE("zb-h1 by hand: activations leave at the input pass, the weight pass's bytes at W") {
  // The plan above under zb-h1. Per micro-batch: kept 120 bytes; held from B to W, per sample
  // (10x10x10 GEMM at tp 2, bf16) (100 + 100/2) * 2 = 300 bytes: 900.
  plan::Plan p = memory_plan(plan::Recompute::none, false, 1e9);
  p.schedule.kind = plan::ScheduleKind::zb_h1;
  CHECK(weight_pass_bytes(p.model.layers[0], 2, plan::Precision::bf16) == 300);
  const plan::Estimate est = evaluate(p);
  const double state = 1100 + 1100 + 6600 + 1000;
  // Group 0: F0 F1 B0 W0 ... peaks at B0: 240 - 120 + 900 = 1020.
  CHECK(est.devices[0].peak_memory_bytes == doctest::Approx(state + 1020));
  // Group 1: F0 B0 F1 B1 W0 ... peaks at B1: 2 x 900 = 1800.
  CHECK(est.devices[4].peak_memory_bytes == doctest::Approx(state + 1800));
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  CHECK(peak_in_flight(program.groups[0], 0) == 2);
  CHECK(peak_in_flight(program.groups[1], 1) == 2);
}

TEST_CASE("allocator slack multiplies the tensors; the calibrated reserve adds to the framework's") {
  // Group 0's tensors: 1100 + 1100 + 6600 + 240 = 9040 bytes; 10% slack adds 904.
  plan::Plan p = memory_plan(plan::Recompute::none, false, 1e9);
  framework_of(p).allocator_slack_fraction = 0.1;
  p.cluster.profiles.begin()->second.calibration.memory_reserve_bytes = 500;
  const plan::Estimate est = evaluate(p);
  CHECK(est.devices[0].peak_memory_bytes == doctest::Approx(9040 + 904 + 1000 + 500));
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  const MemoryBreakdown m = replica_memory(p, program.groups[0], 0);
  CHECK(m.tensor_bytes() == doctest::Approx(9040));
  CHECK(m.allocator_slack_bytes == doctest::Approx(904));
  CHECK(m.framework_reserve_bytes == 1000);
  CHECK(m.calibrated_reserve_bytes == 500);
}

TEST_CASE("flash attention keeps no attention scores, with or without selective recomputation") {
  // Kept per micro-batch of 3 samples: unfused 3 * (10 + 60/2) = 120, flash 3 * (10 + 40/2) =
  // 90; group 0 holds two. Selective recomputation has nothing left to rematerialise. The listed
  // layer has no attention shape: flash drops its activation_bytes_attention whole.
  plan::Plan p = memory_plan(plan::Recompute::none, false, 1e9);
  framework_of(p).attention = plan::AttentionImplementation::flash;
  const double state = 1100 + 1100 + 6600 + 1000;
  CHECK(evaluate(p).devices[0].peak_memory_bytes == doctest::Approx(state + 180));
  for (plan::Stage& s : p.stages) s.recompute = plan::Recompute::selective;
  CHECK(evaluate(p).devices[0].peak_memory_bytes == doctest::Approx(state + 180));
  plan::Layer layer = p.model.layers[0];
  const sim::FrameworkKept flash{layer.activation_bytes_replicated, 0.0};
  CHECK(kept_activation_bytes(layer, 2, plan::Recompute::none, false, flash) == 30);
  CHECK(kept_activation_bytes(layer, 2, plan::Recompute::none, false) == 40);
  CHECK(recompute_transient_bytes(layer, 2, plan::Recompute::selective, false, flash) == 0);
  CHECK(recompute_transient_bytes(layer, 2, plan::Recompute::full, true, flash) == 5 + 20);
}

TEST_CASE("a plan that fits on paper only without the framework's reserve is flagged") {
  // Group 0's tensors need 9040 bytes. Capacity 9500: the tensors alone fit, with the 1000-byte
  // reserve they do not. The cost model's bound agrees with the evaluation.
  plan::Plan p = memory_plan(plan::Recompute::none, false, 9500);
  framework_of(p).reserve_bytes = 0;
  CHECK(evaluate(p).fits);
  CHECK(Simulator().bound(p).fits);
  framework_of(p).reserve_bytes = 1000;
  const plan::Estimate est = evaluate(p);
  CHECK_FALSE(est.fits);
  CHECK(est.devices[0].peak_memory_bytes == doctest::Approx(10040));
  CHECK(est.devices[4].peak_memory_bytes == doctest::Approx(9920));
  const plan::StepBound bound = Simulator().bound(p);
  CHECK_FALSE(bound.fits);
  CHECK(bound.overflowing == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("a framework whose gradient buckets are a copy holds the unsharded gradients twice") {
  // Group 0: 550 parameters per device, 2-byte gradients: 1100 more bytes on a stage of dp 2.
  plan::Plan p = memory_plan(plan::Recompute::none, false, 1e9);
  const double without = evaluate(p).devices[0].peak_memory_bytes;
  framework_of(p).gradient_bucket_copy = true;
  CHECK(evaluate(p).devices[0].peak_memory_bytes == doctest::Approx(without + 1100));
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  CHECK(replica_memory(p, program.groups[0], 0).gradient_bucket_bytes == 1100);
  // Sharded gradients (ZeRO-2) stage through a fixed buffer: no copy.
  for (plan::Stage& s : p.stages) s.shard_optimizer = s.shard_gradients = true;
  CHECK(replica_memory(p, plan::generate_schedule(p).groups[0], 0).gradient_bucket_bytes == 0);
}

TEST_CASE("ZeRO-2's gradients: the replica's piece, or every gradient where the framework keeps its buffer whole") {
  // Group 0: 550 parameters per device, 2-byte gradients, dp 2: a piece of 275.
  plan::Plan p = memory_plan(plan::Recompute::none, true, 1e9);
  for (plan::Stage& s : p.stages) s.shard_gradients = true;
  framework_of(p).sharded_gradients_held_whole = false;
  CHECK(replica_memory(p, plan::generate_schedule(p).groups[0], 0).gradients_bytes == 550);
  framework_of(p).sharded_gradients_held_whole = true;  // whale-run's flat gradient buffer
  const MemoryBreakdown whole = replica_memory(p, plan::generate_schedule(p).groups[0], 0);
  CHECK(whole.gradients_bytes == 1100);
  CHECK(whole.optimizer_bytes == 275 * 12);  // the optimizer state stays sharded
}

TEST_CASE("a sharded optimizer holds every master weight where the framework keeps them whole") {
  // bf16 Adam: master weights 4, m and v 8 bytes per parameter; 550 parameters, a piece of 275.
  plan::Plan p = memory_plan(plan::Recompute::none, true, 1e9);
  framework_of(p).master_weights_held_whole = false;
  CHECK(replica_memory(p, plan::generate_schedule(p).groups[0], 0).optimizer_bytes == 275 * 12);
  framework_of(p).master_weights_held_whole = true;  // whale-run steps its piece of whole values
  CHECK(replica_memory(p, plan::generate_schedule(p).groups[0], 0).optimizer_bytes == 275 * 8 + 550 * 4);
  for (plan::Stage& s : p.stages) s.shard_optimizer = false;  // unsharded: the flag changes nothing
  CHECK(replica_memory(p, plan::generate_schedule(p).groups[0], 0).optimizer_bytes == 550 * 12);
  // fp32 has no master weights: nothing is held whole.
  const StateBytesPerParam fp32 = state_bytes_per_param(plan::Precision::fp32, "adamw");
  plan::FrameworkMemory framework;
  framework.master_weights_held_whole = true;
  CHECK(plan::unsharded_optimizer_bytes_per_param(fp32, framework) == 0);
  CHECK(plan::unsharded_optimizer_bytes_per_param(state_bytes_per_param(plan::Precision::bf16, "adamw"), framework) == 4);
  CHECK(plan::optimizer_bytes_per_param(12, 4, 2) == 8);  // (12 - 4) / 2 + 4
}

TEST_CASE("a cpu profile describes whale-run's ZeRO: gradients and master weights held whole") {
  const plan::FrameworkMemory cpu = plan::default_framework_memory("cpu");
  CHECK(cpu.sharded_gradients_held_whole);
  CHECK(cpu.master_weights_held_whole);
  const plan::FrameworkMemory gpu = plan::default_framework_memory("gpu");
  CHECK_FALSE(gpu.sharded_gradients_held_whole);
  CHECK_FALSE(gpu.master_weights_held_whole);
}

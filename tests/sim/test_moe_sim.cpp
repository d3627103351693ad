// File: test_moe_sim.cpp
// The simulator's mixture-of-experts costs: the all-to-all over a node's links and across
// nodes by hand, expert weights sharded by ep x expert_tp and their optimizer state by expert dp,
// the busiest device's imbalance on an MoE step, and at dp 1 the experts' own gradient
// reduction over expert dp.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim_fixtures.h"
#include "whale/plan/gradient_buckets.h"
#include "whale/plan/model_state_bytes.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// Writes a file under <build>/moe-sim/ and returns its path.
std::string scratch(const std::string& name, const std::string& text) {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/moe-sim";
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/" + name) << text;
  return folder + "/" + name;
}

// A tiny llama of two MoE blocks (4 experts of width 6, top 2), fp32, on 4 CPUs of one node.
void write_specs(double load_imbalance) {
  scratch("cluster.yaml",
          "name: four\nnetwork: {kind: shm, bandwidth_gbps: 40, latency_us: 1}\n"
          "nodes:\n  - {name: n, devices: [{model: cpu, count: 4}], intra_link: {kind: shm, bandwidth_gbps: 40, latency_us: 1}}\n");
  scratch("model.yaml",
          "name: moe\nfamily: llama\nlayers: 2\nhidden: 8\nheads: 2\nffn_hidden: 16\nsequence: 4\nvocabulary: 10\n"
          "moe: {experts: 4, top_k: 2, expert_ffn_hidden: 6, load_imbalance: " + std::to_string(load_imbalance) + "}\n"
          "training: {global_batch: 8, precision: fp32}\n");
}

plan::Plan moe_plan(const std::string& name, const std::string& layout) {
  return plan::load_plan(scratch(name, "cluster: cluster.yaml\nmodel: model.yaml\nmicro_batch_size: 4\nmicro_batches: 2\n"
                                       "schedule: 1f1b\nstages:\n  - {layers: [0, 3], devices: \"0-3\", tp: 1, " + layout + "}\n"),
                         std::string(WHALE_SOURCE_DIR) + "/profiles");
}

}  // namespace

TEST_CASE("all-to-all: each device's bytes / n to every member, intra and network at once") {
  // 2 nodes x 4 devices; the node NIC (4e10 B/s) shared by 4 devices: 1e10 each.
  const plan::Cluster c = test::make_cluster(2, 4, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 1e-6), test::link(4e10, 1e-5));
  // One node: 3 messages of 8e8 / 4 over the intra link.
  CHECK(all_to_all_s(c, {0, 1, 2, 3}, 8e8) == doctest::Approx(3 * (2e8 / 1e11 + 1e-6)));
  // Two per node: 1 message in the node (2e-3 s), 2 over the network share (0.02 s each): the
  // network bounds it.
  CHECK(all_to_all_s(c, {0, 1, 4, 5}, 8e8) == doctest::Approx(2 * (2e8 / 1e10 + 1e-5)));
  CHECK(all_to_all_s(c, {3}, 8e8) == 0);
  CHECK(all_to_all_s(c, {0, 1}, 0) == 0);
}

TEST_CASE("moe memory: experts sharded by ep x expert_tp, their optimizer state by expert dp") {
  write_specs(1.0);
  const plan::Plan replicated = moe_plan("ep1.yaml", "ep: 1");
  const plan::Plan split = moe_plan("ep4.yaml", "ep: 4, shard_optimizer: true");
  // Per MoE block: experts 4 x 3 x 8 x 6 = 576 parameters; two blocks.
  const double whole = stage_parameters_per_device(replicated, 0, 0);
  CHECK(whole == replicated.model.parameter_count());
  CHECK(stage_parameters_per_device(split, 0, 0) == whole - 2 * 576 * 3.0 / 4);
  const MemoryBreakdown a = replica_memory(replicated, plan::generate_schedule(replicated).groups[0], 0);
  const MemoryBreakdown b = replica_memory(split, plan::generate_schedule(split).groups[0], 1);
  const plan::StateBytesPerParam state = plan::state_bytes_per_param(plan::Precision::fp32, "adamw", {});
  CHECK(a.weights_bytes == doctest::Approx(whole * state.weights));
  CHECK(b.weights_bytes == doctest::Approx((whole - 864) * state.weights));
  // ep 4 on 4 devices: expert dp 1, so each device keeps all of its 288 expert parameters'
  // state; the dense rest is a ZeRO-1 shard of four.
  const double dense = whole - 1152;
  CHECK(b.optimizer_bytes == doctest::Approx((flat_shard_elements(dense, 4, 1) + 288) * state.optimizer));
}

TEST_CASE("moe step: load imbalance slows the step and costs no model flops") {
  write_specs(1.0);
  const plan::Estimate balanced = Simulator().evaluate(moe_plan("bal.yaml", "ep: 2"), {});
  write_specs(2.0);
  const plan::Estimate skewed = Simulator().evaluate(moe_plan("skew.yaml", "ep: 2"), {});
  CHECK(skewed.step_time_s > balanced.step_time_s);
  CHECK(skewed.model_flops_per_step == balanced.model_flops_per_step);
}

TEST_CASE("moe at dp 1 with its experts replicated: their gradients alone reduced over expert dp") {
  write_specs(1.0);
  // tp 2 on devices 0-1, the experts whole on both (ep 1, expert_tp 1): dp 1, expert dp 2.
  const auto tp2_plan = [](const std::string& name, const std::string& layout) {
    return plan::load_plan(scratch(name, "cluster: cluster.yaml\nmodel: model.yaml\nmicro_batch_size: 4\n"
                                         "micro_batches: 2\nschedule: 1f1b\nstages:\n  - {layers: [0, 3], "
                                         "devices: \"0-1\", tp: 2, ep: 1, " + layout + "}\n"),
                           std::string(WHALE_SOURCE_DIR) + "/profiles");
  };
  plan::Plan p = tp2_plan("expert-dp2.yaml", "expert_tp: 1");
  REQUIRE(p.stages[0].dp() == 1);
  REQUIRE(p.stages[0].expert_dp() == 2);
  CHECK(p.reduces_gradients(0));
  // Two blocks of 576 expert parameters, all held by each device, fp32 gradients: one bucket.
  const std::vector<plan::GradientBucket> buckets = plan::gradient_buckets(p, 0);
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].expert_bytes == 2 * 576 * 4.0);
  CHECK(buckets[0].bytes > buckets[0].expert_bytes);
  const Simulator simulator;
  CHECK(test::device_event_s(simulator.evaluate(p, {true}), "reduce_bucket s0 b0") ==
        doctest::Approx(allreduce_s(p.cluster, {0, 1}, 4608.0)));
  // ZeRO-2: reduce-scattered, and the updated experts (their 1152 fp32 weights) all-gathered.
  p.stages[0].shard_optimizer = p.stages[0].shard_gradients = true;
  const plan::Estimate zero2 = simulator.evaluate(p, {true});
  CHECK(test::device_event_s(zero2, "reduce_bucket s0 b0") ==
        doctest::Approx(reduce_scatter_s(p.cluster, {0, 1}, 4608.0)));
  CHECK(test::device_event_s(zero2, "allgather weights s0") == doctest::Approx(all_gather_s(p.cluster, {0, 1}, 4608.0)));
  // The experts split over the tensor group (expert_tp = tp): expert dp 1, nothing to reduce.
  const plan::Plan split = tp2_plan("expert-tp2.yaml", "expert_tp: 2");
  CHECK_FALSE(split.reduces_gradients(0));
  CHECK(test::device_event_s(simulator.evaluate(split, {true}), "reduce_bucket s0 b0") == -1);
}

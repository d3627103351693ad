// File: test_moe_uneven_experts.cpp
// The simulator under uneven expert counts (Stage::expert_counts): each ep rank's expert
// compute follows its count, its device's speed and the ep group's tokens, and its expert
// memory its count, by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim_fixtures.h"
#include "whale/plan/model_state_bytes.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// A fast device (bf16 peak 3e12 flop/s) and a slow one (1e12) on one node, running one MoE
/// layer whose only op is a routed expert GEMM of 1 row per expert and sample (4 experts,
/// 1000 x 1000), no parameters and no all-to-all bytes, at ep 2 with one sample per replica.
plan::Plan two_speed_plan(const std::vector<int>& expert_counts, const std::vector<int>& shares = {1, 1}) {
  plan::DeviceProfile fast = test::flat_profile(3e12, 1e12);
  fast.name = "fast";
  plan::DeviceProfile slow = test::flat_profile(1e12, 1e12);
  slow.name = "slow";
  plan::Cluster cluster = test::make_cluster(1, 2, fast, test::link(1e11, 0), test::link(1e10, 0));
  cluster.profiles["slow"] = slow;
  cluster.devices[1].model = "slow";
  plan::Layer layer;
  layer.name = "moe";
  layer.gemms.push_back(plan::GemmOp{"expert_fc", 1, 1000, 1000, 4, false, true});
  layer.experts = 4;
  plan::Plan p = test::pipeline_plan(cluster, {layer}, plan::ScheduleKind::one_f_one_b, 1, 2, 1, 1);
  p.model.moe = plan::MoeSpec{};
  p.model.moe->experts = 4;
  p.model.moe->top_k = 1;
  p.stages[0].ep = 2;
  p.stages[0].expert_counts = expert_counts;
  p.stages[0].shares = shares;
  p.micro_batch_size = shares[0] + shares[1];
  return p;
}

/// Writes a file under <build>/moe-uneven/ and returns its path.
std::string scratch(const std::string& name, const std::string& text) {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/moe-uneven";
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/" + name) << text;
  return folder + "/" + name;
}

}  // namespace

TEST_CASE("uneven experts: each ep rank computes its own experts at its device's speed") {
  // At ep 2 each expert takes 1 row x 2 members = 2 rows: forward 2 x 2 x 1000 x 1000 = 4e6
  // flops per expert, backward twice that, so 1.2e7 flops per expert and step.
  // Even (2, 2): the fast device 2.4e7 / 3e12 = 8 us, the slow one 2.4e7 / 1e12 = 24 us.
  const plan::Estimate even = Simulator().evaluate(two_speed_plan({}), {});
  REQUIRE(even.devices.size() == 2);
  CHECK(even.devices[0].busy_s == doctest::Approx(8e-6));
  CHECK(even.devices[1].busy_s == doctest::Approx(24e-6));
  // Counts (3, 1), as the speeds: 3.6e7 / 3e12 = 12 us and 1.2e7 / 1e12 = 12 us.
  const plan::Estimate uneven = Simulator().evaluate(two_speed_plan({3, 1}), {});
  CHECK(uneven.devices[0].busy_s == doctest::Approx(12e-6));
  CHECK(uneven.devices[1].busy_s == doctest::Approx(12e-6));
  CHECK(uneven.step_time_s < even.step_time_s - 11e-6);
  // The useful work is the same: 4 experts x 1.2e7.
  CHECK(uneven.model_flops_per_step == doctest::Approx(even.model_flops_per_step));
  CHECK(uneven.model_flops_per_step == doctest::Approx(4.8e7));
}

TEST_CASE("uneven shares: an expert takes its share of the whole ep group's tokens") {
  // Shares 3 and 1: each expert takes 1 row of each of the group's 4 samples, 4 rows on either
  // device (the group's mean share 2 over the replica's own: scales 2/3 and 2). Forward
  // 2 x 4 x 1e6 = 8e6 flops per expert, 2.4e7 with the backward.
  // Even (2, 2): the fast device 4.8e7 / 3e12 = 16 us, the slow one 4.8e7 / 1e12 = 48 us.
  const plan::Estimate even = Simulator().evaluate(two_speed_plan({}, {3, 1}), {});
  CHECK(even.devices[0].busy_s == doctest::Approx(16e-6));
  CHECK(even.devices[1].busy_s == doctest::Approx(48e-6));
  // Counts (3, 1): 7.2e7 / 3e12 = 24 us and 2.4e7 / 1e12 = 24 us.
  const plan::Estimate uneven = Simulator().evaluate(two_speed_plan({3, 1}, {3, 1}), {});
  CHECK(uneven.devices[0].busy_s == doctest::Approx(24e-6));
  CHECK(uneven.devices[1].busy_s == doctest::Approx(24e-6));
  CHECK(uneven.model_flops_per_step == doctest::Approx(even.model_flops_per_step));
  CHECK(uneven.model_flops_per_step == doctest::Approx(4 * 2.4e7));
}

TEST_CASE("uneven experts: weights, gradients and optimizer state follow each rank's count") {
  scratch("cluster.yaml", test::kFourCpuClusterYaml);
  // Two MoE blocks of 4 experts, each 3 x 8 x 6 = 144 parameters (576 per block).
  scratch("model.yaml", test::kTinyMoeLlamaYaml);
  const auto load = [](const std::string& name, const std::string& layout) {
    return plan::load_plan(scratch(name, "cluster: cluster.yaml\nmodel: model.yaml\nmicro_batch_size: 4\nmicro_batches: 2\n"
                                         "schedule: 1f1b\nstages:\n  - {layers: [0, 3], devices: \"0-3\", tp: 1, " + layout + "}\n"),
                           std::string(WHALE_SOURCE_DIR) + "/profiles");
  };
  const plan::Plan even = load("even.yaml", "ep: 2, shard_optimizer: true");
  const plan::Plan uneven = load("uneven.yaml", "ep: 2, expert_counts: [3, 1], shard_optimizer: true");
  const double whole = even.model.parameter_count();
  // Even: 2 of 4 experts per block, 2 x 288 held of 2 x 576. Uneven: devices 0 and 2 (ep rank
  // 0) hold 3 experts (432 per block), devices 1 and 3 one (144).
  CHECK(stage_parameters_per_device(even, 0, 1) == whole - 576);
  CHECK(stage_parameters_per_device(uneven, 0, 0) == whole - 288);
  CHECK(stage_parameters_per_device(uneven, 0, 1) == whole - 864);
  CHECK(stage_parameters_per_device(uneven, 0, 2) == whole - 288);
  const plan::StateBytesPerParam state = plan::state_bytes_per_param(plan::Precision::fp32, "adamw", {});
  const plan::GroupProgram group = plan::generate_schedule(uneven).groups[0];
  const MemoryBreakdown big = replica_memory(uneven, group, 0);
  const MemoryBreakdown small = replica_memory(uneven, group, 1);
  CHECK(big.weights_bytes == doctest::Approx((whole - 288) * state.weights));
  CHECK(small.gradients_bytes == doctest::Approx((whole - 864) * state.gradients));
  // The optimizer state: the dense part ZeRO-1-sharded over dp 4, the experts over expert dp
  // 2: 864 / 2 on rank 0's devices, 288 / 2 on rank 1's.
  const double dense = whole - 1152;
  CHECK(big.optimizer_bytes == doctest::Approx((flat_shard_elements(dense, 4, 0) + 432) * state.optimizer));
  CHECK(small.optimizer_bytes == doctest::Approx((flat_shard_elements(dense, 4, 1) + 144) * state.optimizer));
}

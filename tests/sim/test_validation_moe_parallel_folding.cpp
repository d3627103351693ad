// File: test_validation_moe_parallel_folding.cpp
// The simulator against the MoE Parallel Folding paper (Liu et al. 2025, "MoE Parallel Folding:
// Heterogeneous Parallelism Mappings for Efficient Large-Scale MoE Model Training with Megatron
// Core", arXiv 2504.14960): 49.3% MFU for Mixtral 8x22B on H100s. The paper's table of layouts
// could not be retrieved; the layout is its authors' Megatron-Core benchmark configuration of
// the model on 128 H100s as of the paper's first version (configs/validation/moe-folding-2025/,
// sources in its header).
// whale's MFU of that layout within 15% of 49.3%.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "whale/plan/plan.h"
#include "whale/sim/simulator.h"

using namespace whale;

TEST_CASE("MoE Parallel Folding: Mixtral 8x22B on 128 H100s, simulated MFU within 15% of 49.3%") {
  const plan::Plan p = plan::load_plan(std::string(WHALE_SOURCE_DIR) +
                                       "/configs/validation/moe-folding-2025/mixtral-8x22b-128gpu.yaml");
  REQUIRE(p.cluster.devices.size() == 128);
  REQUIRE(p.global_batch() == 256);
  REQUIRE(p.model.parameter_count() == 140620634112.0);
  REQUIRE(p.stages.front().expert_dp() == 2);  // 16 devices / (ep 8 x expert_tp 1)
  const plan::Estimate est = sim::Simulator().evaluate(p, {});
  CAPTURE(est.step_time_s);
  CAPTURE(est.mfu);
  // The memory check is not asserted: the run used flash attention, and the shipped H100
  // profile's framework keeps fused-softmax attention (its s^2 scores), so whale counts more
  // activations on the first stages than the run held.
  CHECK(std::abs(est.mfu - 0.493) / 0.493 < 0.15);
}

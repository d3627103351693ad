// File: test_validation_moe_parallel_folding.cpp
// The simulator against the MoE Parallel Folding paper (Liu et al. 2025, "MoE Parallel Folding:
// Heterogeneous Parallelism Mappings for Efficient Large-Scale MoE Model Training with Megatron
// Core", arXiv 2504.14960): 49.3% MFU for Mixtral 8x22B and 39.0% for Qwen2-57B-A14B on H100s.
// The paper's table of layouts could not be retrieved; each layout is its authors' Megatron-Core
// benchmark configuration of the model as of the paper's first version
// (configs/validation/moe-folding-2025/, sources in each file's header).
// MFU is Megatron-LM's (num_floating_point_operations in megatron/training/training.py): 3 x the
// forward GEMM FLOPs, attention's scores counted in full (no causal halving), over the step time
// and the devices' dense peak; whale counts the router's GEMM as well.
// Mixtral: whale's MFU of that layout within 15% of 49.3%. Qwen2: whale's FLOPs equal the formula
// exactly; its MFU misses the 15% band (45.4% against 39.0%), kept as an expected failure, as is
// Mixtral 8x22B at VPP 7 (56.6% against the 47.0% of its authors' benchmark script).
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

namespace {

const char* kQwenPlan = "/configs/validation/moe-folding-2025/qwen2-57b-a14b-64gpu.yaml";

}  // namespace

TEST_CASE("MoE Parallel Folding: Qwen2-57B-A14B's model FLOPs are Megatron-LM's formula plus the router") {
  const plan::Plan p = plan::load_plan(std::string(WHALE_SOURCE_DIR) + kQwenPlan);
  REQUIRE(p.cluster.devices.size() == 64);
  REQUIRE(p.global_batch() == 256);
  REQUIRE(p.stages.size() == 28);                // PP 4 x VPP 7, one block per chunk
  REQUIRE(p.stages.front().expert_dp() == 4);    // 16 devices / (ep 4 x expert_tp 1)
  const plan::Estimate est = sim::Simulator().evaluate(p, {});
  CHECK(est.fits);  // 64.2 GiB on the busiest device of 80
  // Megatron-LM: 12 B s L h^2 [(1 + kv/heads + s/h) + (f/h) k 3/2 + (f_shared/h) 3/2 + V/(2 L h)]
  // with B 256, s 4096, L 28, h 3584, kv 4, heads 28, experts' f 2560, k 8, shared f 20480,
  // V 151936 (SwiGLU: 3/2); the router: 3 x 2 s h E per block and sample, E 64.
  const double B = 256, s = 4096, L = 28, h = 3584;
  const double bracket = (1 + 4.0 / 28 + s / h) + (2560 / h) * 8 * 1.5 + (20480 / h) * 1.5 +
                         151936 / (2 * L * h);
  const double megatron_flops = 12 * B * s * L * h * h * bracket;  // 9.13517e16
  const double router_flops = 6 * B * s * L * h * 64;              // 4.04071e13
  CHECK(est.model_flops_per_step == doctest::Approx(megatron_flops + router_flops).epsilon(1e-9));
}

// whale-sim gives 45.4% (step 3.18 s; the paper's 39.0% is a step of 3.70 s): 16.5% above, outside
// the band. Not tuned: docs/moe.md ("The VPP 7 miss") says what was ruled out and what
// remains. The decorator makes this case pass while the miss stands and fail once the model
// comes within the band (then drop the decorator).
TEST_CASE("MoE Parallel Folding: Qwen2-57B-A14B on 64 H100s, simulated MFU within 15% of 39.0%" *
          doctest::should_fail()) {
  const plan::Plan p = plan::load_plan(std::string(WHALE_SOURCE_DIR) + kQwenPlan);
  const plan::Estimate est = sim::Simulator().evaluate(p, {});
  CAPTURE(est.step_time_s);
  CAPTURE(est.mfu);
  CHECK(std::abs(est.mfu - 0.390) / 0.390 < 0.15);
}

// The same model at VPP 7, the Megatron-MoE-ModelZoo layout from July 2025 on, whose script
// states about 465 TFLOP/s per GPU with forced balance (47.0% MFU): whale-sim gives 56.6%, 21%
// above, a miss of the same kind as the Qwen2 case (docs/moe.md, "The VPP 7 miss"). An expected
// failure like it.
TEST_CASE("Megatron-MoE-ModelZoo: Mixtral 8x22B at VPP 7 on 128 H100s, simulated MFU within 15% of 47.0%" *
          doctest::should_fail()) {
  const plan::Plan p = plan::load_plan(std::string(WHALE_SOURCE_DIR) +
                                       "/configs/validation/moe-folding-2025/mixtral-8x22b-128gpu-vpp7.yaml");
  REQUIRE(p.stages.size() == 56);  // PP 8 x VPP 7, one block per chunk
  const plan::Estimate est = sim::Simulator().evaluate(p, {});
  CAPTURE(est.step_time_s);
  CAPTURE(est.mfu);
  CHECK(std::abs(est.mfu - 0.470) / 0.470 < 0.15);
}

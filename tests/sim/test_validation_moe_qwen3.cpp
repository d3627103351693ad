// File: test_validation_moe_qwen3.cpp
// The simulator against NVIDIA's published Qwen3-235B-A22B runs on 256 H100s (Megatron-MoE-ModelZoo,
// the Megatron-Core MoE authors' benchmark repository, best_practice/qwen3/readme.md, H100 table:
// sequence 4096, bf16, GBS 2048). Plans: configs/validation/megatron-moe-qwen3-2025/ (the layout of
// each row in its header). The table's TFLOP/s per GPU are Megatron-LM's model FLOPs
// (num_floating_point_operations in megatron/training/training.py, whose attention core is halved
// for the causal mask) over the step time: 245 x 19.7 s, 200 x 24.2 s and 167 x 29.0 s x 256 GPUs
// are each 1.24e18 FLOPs per step, the formula's figure below. whale's prediction is that
// figure over whale-sim's step time and 256 GPUs. The cross-node EP row is within the 15% band;
// the two intra-node EP rows miss it (docs/moe.md, "Qwen3-235B-A22B on 256 H100s"): expected
// failures, as the VPP 7 rows of the Parallel Folding test are.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "whale/plan/plan.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

const std::string kFolder = std::string(WHALE_SOURCE_DIR) + "/configs/validation/megatron-moe-qwen3-2025/";

// Qwen3-235B-A22B: B 2048 samples of s 4096 tokens, L 94 blocks, h 4096, attention width
// q = 64 x 128 = 8192, k and v 4 x 128 = 512 each, 8 of 128 experts of width 1536 (SwiGLU),
// V 151936.
constexpr double B = 2048, s = 4096, L = 94, h = 4096, q = 8192, kv = 512, f = 1536, k = 8, E = 128,
                 V = 151936;
// Per token and block, training (3 x forward, 2 FLOPs per multiply-add): q, k, v and out
// projections 6 (h (q + 2 kv) + q h), the attention core 6 x 2 q s (scores and context), the
// routed experts 6 x 3 h f k; per token, the LM head 6 h V.
constexpr double kProjections = 6 * (h * (q + 2 * kv) + q * h);
constexpr double kCore = 12 * q * s;
constexpr double kExperts = 18 * h * f * k;
constexpr double kHead = 6 * h * V;
// Megatron-LM's count: the core halved for the causal mask (1.24183e18 per step).
constexpr double kMegatronFlops = B * s * (L * (kProjections + kCore / 2 + kExperts) + kHead);

// whale-sim's TFLOP/s per GPU in Megatron-LM's count.
double predicted_tflops_per_gpu(const std::string& plan_file) {
  const plan::Plan p = plan::load_plan(kFolder + plan_file);
  REQUIRE(p.cluster.devices.size() == 256);
  REQUIRE(p.global_batch() == 2048);
  const plan::Estimate est = sim::Simulator().evaluate(p, {});
  CAPTURE(est.step_time_s);
  return kMegatronFlops / est.step_time_s / 256 / 1e12;
}

}  // namespace

TEST_CASE("Qwen3-235B-A22B: parameters and model FLOPs with heads wider than hidden / heads") {
  const plan::Plan p = plan::load_plan(kFolder + "qwen3-235b-a22b-tp4-ep8-pp8-vpp4.yaml");
  // Per block: attention 4096 x 9216 + 8192 x 4096 = 71,303,168; experts 128 x 3 x 4096 x 1536 =
  // 2,415,919,104; router 4096 x 128 = 524,288; two RMSNorms 8,192: 2,487,754,752; x 94 =
  // 233,848,946,688. Token table and LM head 2 x 151936 x 4096 = 1,244,659,712; final norm 4,096.
  // The model card's 235,093,634,560 (transformers' count) also holds the qk-norm weights,
  // 94 x 2 x 128 = 24,064, which whale leaves out.
  CHECK(p.model.parameter_count() == 235093610496.0);
  CHECK(p.model.parameter_count() + 94 * 2 * 128 == 235093634560.0);
  // whale counts the core in full and adds the router's GEMM, 6 h E per token and block.
  const plan::Estimate est = sim::Simulator().evaluate(p, {});
  const double whale_formula = B * s * (L * (kProjections + kCore + kExperts + 6 * h * E) + kHead);
  CHECK(est.model_flops_per_step == doctest::Approx(whale_formula).epsilon(1e-9));
  CHECK(kMegatronFlops == doctest::Approx(1.24181e18).epsilon(1e-5));
}

// Cross-node EP 32 (four nodes per expert group), DeepEP (the plan's moe_dispatcher): whale-sim's
// step 18.08 s against 19.7 s, 268 TFLOP/s against 245 (9.5% above). Priced as NCCL's
// all-to-all it takes 25.6 s (190 TFLOP/s, 23% below): DeepEP sends a token once per node over
// the network, 0.45 of the all-to-all's bytes at this layout (docs/moe.md, "Dispatchers").
TEST_CASE("Megatron-MoE-ModelZoo: Qwen3-235B-A22B TP2 EP32 PP8 VPP4 on 256 H100s within 15% of 245 TFLOP/s") {
  const double predicted = predicted_tflops_per_gpu("qwen3-235b-a22b-tp2-ep32-pp8-vpp4.yaml");
  CAPTURE(predicted);
  CHECK(std::abs(predicted - 245) / 245 < 0.15);
}

// Intra-node EP 8, PP 32, the all-to-all dispatcher: whale-sim's step 16.0 s against 24.2 s (303
// TFLOP/s against 200, 52% above; docs/moe.md says what remains).
TEST_CASE("Megatron-MoE-ModelZoo: Qwen3-235B-A22B TP2 EP8 PP32 VPP3 on 256 H100s within 15% of 200 TFLOP/s" *
          doctest::should_fail()) {
  const double predicted = predicted_tflops_per_gpu("qwen3-235b-a22b-tp2-ep8-pp32-vpp3.yaml");
  CAPTURE(predicted);
  CHECK(std::abs(predicted - 200) / 200 < 0.15);
}

// TP 4, intra-node EP 8, DeepEP: whale-sim's step 18.1 s against 29.0 s (268 TFLOP/s against 167,
// 61% above).
TEST_CASE("Megatron-MoE-ModelZoo: Qwen3-235B-A22B TP4 EP8 PP8 VPP4 on 256 H100s within 15% of 167 TFLOP/s" *
          doctest::should_fail()) {
  const double predicted = predicted_tflops_per_gpu("qwen3-235b-a22b-tp4-ep8-pp8-vpp4.yaml");
  CAPTURE(predicted);
  CHECK(std::abs(predicted - 167) / 167 < 0.15);
}

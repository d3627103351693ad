// File: test_op_cost.cpp
// Exact op costs on flat and curved profiles: GEMM and memory-op time, tp split, backward
// (and its weight-gradient part), recomputation, and a grouped expert GEMM's launches.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/op_cost.h"

using namespace whale;
using namespace whale::sim;

TEST_CASE("a GEMM takes flops / peak on a flat profile, divided by tp when split") {
  const plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  const plan::GemmOp gemm{"fc", 1000, 1000, 1000, 1, true};
  CHECK(gemm_flops(gemm, 1, 2) == 4e9);
  CHECK(gemm_kernel_s(gemm, p, plan::Precision::bf16, 1, 2) == doctest::Approx(4e-5));
  CHECK(gemm_kernel_s(gemm, p, plan::Precision::bf16, 4, 2) == doctest::Approx(1e-5));
  const plan::GemmOp replicated{"fc", 1000, 1000, 1000, 1, false};
  CHECK(gemm_kernel_s(replicated, p, plan::Precision::bf16, 4, 2) == doctest::Approx(4e-5));
  // fp32 runs at the fp32 peak (half of bf16 here).
  CHECK(gemm_kernel_s(gemm, p, plan::Precision::fp32, 1, 2) == doctest::Approx(8e-5));
}

TEST_CASE("the GEMM efficiency curve is read at the kernel's flops") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.gemm_efficiency[plan::Precision::bf16] =
      plan::EfficiencyCurve({{1e9, 0.25}, {1e12, 0.5}});
  const plan::GemmOp gemm{"fc", 1000, 1000, 500, 1, true};  // 1e9 flops per sample
  CHECK(gemm_kernel_s(gemm, p, plan::Precision::bf16, 1, 1) == doctest::Approx(1e9 / 0.25e14));
  // 1000 samples: 1e12 flops in one kernel, efficiency 0.5.
  CHECK(gemm_kernel_s(gemm, p, plan::Precision::bf16, 1, 1000) ==
        doctest::Approx(1e12 / 0.5e14));
}

TEST_CASE("a memory op takes bytes / (bandwidth * efficiency)") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.memory_efficiency = plan::EfficiencyCurve({{1e6, 0.5}, {1e9, 0.5}});
  const plan::MemoryOp op{"norm", 1e6, false};
  CHECK(memory_kernel_s(op, p, 8, 3) == doctest::Approx(3e6 / 0.5e12));
  const plan::MemoryOp split{"softmax", 8e6, true};
  CHECK(memory_kernel_s(split, p, 8, 1) == doctest::Approx(1e6 / 0.5e12));
}

TEST_CASE("layer cost: backward doubles GEMMs, recomputation adds forward work") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.kernel_launch_s = 1e-6;
  plan::Layer layer = test::gemm_layer(1000, 1000, 1000, 1e6);
  layer.gemms.push_back(plan::GemmOp{"attention_scores", 100, 100, 100, 10, true});  // 2e7 flops
  layer.memory_ops.push_back(plan::MemoryOp{"attention_softmax", 1e5, true});
  // Per sample, 2 samples, tp 1: fc 4e-5, scores 4e-7, norm 2e-6, softmax 2e-7; 4 launches.
  const double fc = 4e-5, scores = 4e-7, norm = 2e-6, softmax = 2e-7, launch = 1e-6;
  const LayerCost none = layer_cost(layer, p, plan::Precision::bf16, 1, 2, plan::Recompute::none);
  CHECK(none.forward_s == doctest::Approx(fc + scores + norm + softmax + 4 * launch));
  CHECK(none.backward_s ==
        doctest::Approx(2 * (fc + scores) + norm + softmax + 6 * launch));
  CHECK(none.recompute_s == 0);
  CHECK(none.forward_flops == doctest::Approx(4e9 + 4e7));
  const LayerCost full = layer_cost(layer, p, plan::Precision::bf16, 1, 2, plan::Recompute::full);
  CHECK(full.recompute_s == doctest::Approx(none.forward_s));
  const LayerCost sel =
      layer_cost(layer, p, plan::Precision::bf16, 1, 2, plan::Recompute::selective);
  CHECK(sel.recompute_s == doctest::Approx(scores + softmax + 2 * launch));
}

TEST_CASE("attention-core op names") {
  CHECK(is_attention_core("attention_scores"));
  CHECK(is_attention_core("attention_context"));
  CHECK(is_attention_core("attention_softmax"));
  CHECK(is_attention_core("attention_dropout"));
  CHECK_FALSE(is_attention_core("attention_proj_dropout"));
  CHECK_FALSE(is_attention_core("attention_qkv"));
  CHECK_FALSE(is_attention_core("mlp_fc1"));
}

TEST_CASE("op costs: the weight pass is the weight-gradient GEMMs, the attention core has none") {
  // One GEMM of 1 ms forward per sample (1e11 flops at 1e14 flop/s).
  plan::Layer layer = test::gemm_layer(1e5, 1e3, 5e2, 0);
  const plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
  LayerCost cost = layer_cost(layer, profile, plan::Precision::bf16, 1, 1, plan::Recompute::none);
  CHECK(cost.backward_s == doctest::Approx(2e-3 + 2 * profile.kernel_launch_s));
  CHECK(cost.backward_weight_s == doctest::Approx(1e-3 + profile.kernel_launch_s));
  layer.gemms.push_back(plan::GemmOp{"attention_scores", 1e5, 1e3, 5e2, 1, true});
  cost = layer_cost(layer, profile, plan::Precision::bf16, 1, 1, plan::Recompute::none);
  CHECK(cost.backward_s == doctest::Approx(4e-3 + 4 * profile.kernel_launch_s));
  CHECK(cost.backward_weight_s == doctest::Approx(1e-3 + profile.kernel_launch_s));
}

TEST_CASE("a routed expert's grouped GEMM launches one kernel per expert the device holds") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.kernel_launch_s = 5e-6;
  // 4 experts of 100 rows each (2e6 flops each, 8e6 in all: 8e-8 s at 1e14) and a dense GEMM
  // of the same flops: the grouped one pays 4 launches, the dense one 1.
  const plan::GemmOp grouped{"expert_up", 100, 100, 100, 4, false, true};
  const plan::GemmOp dense{"fc", 200, 200, 100, 1, false};
  CHECK(gemm_kernels(grouped) == 4);
  CHECK(gemm_kernels(dense) == 1);
  plan::GemmOp none_held = grouped;
  none_held.count = 0.4;  // a fraction of an expert still launches one kernel
  CHECK(gemm_kernels(none_held) == 1);
  plan::Layer layer;
  layer.kind = plan::LayerKind::transformer;
  layer.gemms = {grouped};
  const LayerCost experts = layer_cost(layer, p, plan::Precision::bf16, 1, 1, plan::Recompute::none);
  CHECK(experts.forward_s == doctest::Approx(8e-8 + 4 * 5e-6));
  CHECK(experts.backward_s == doctest::Approx(2 * (8e-8 + 4 * 5e-6)));
  CHECK(experts.backward_weight_s == doctest::Approx(8e-8 + 4 * 5e-6));
  layer.gemms = {dense};
  const LayerCost one = layer_cost(layer, p, plan::Precision::bf16, 1, 1, plan::Recompute::none);
  CHECK(one.forward_s == doctest::Approx(8e-8 + 5e-6));
}

// File: test_op_cost_flash_attention.cpp
// A profile whose framework keeps flash attention and measured its rates prices the attention
// core (scores and context GEMMs, softmax) as one forward and one backward kernel at those rates;
// without the rates, or under another attention implementation, the GEMM curve prices it.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/op_cost.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// One block's attention at s = 1024, head size 64, 8 heads, and one 1e12-FLOP projection.
plan::Layer attention_layer() {
  plan::Layer layer;
  layer.kind = plan::LayerKind::transformer;
  layer.gemms.push_back({"attention_scores", 1024, 1024, 64, 8});   // 2 * 1024^2 * 64 * 8 FLOPs
  layer.gemms.push_back({"attention_context", 1024, 64, 1024, 8});  // the same
  layer.gemms.push_back({"attention_proj", 1e6, 1e3, 500});         // 1e12 FLOPs
  layer.memory_ops.push_back({"attention_softmax", 1e9, true});
  return layer;
}

}  // namespace

TEST_CASE("flash attention rates price the attention core as one kernel each way") {
  plan::DeviceProfile p = test::flat_profile(1e15, 1e12);
  p.framework_memory.attention = plan::AttentionImplementation::flash;
  p.flash_attention.rates = {{64, 2e14, 1e14}, {128, 4e14, 2e14}};
  const double core_flops = 4.0 * 1024 * 1024 * 64 * 8;  // 2.147e9 per sample
  const LayerCost cost = layer_cost(attention_layer(), p, plan::Precision::bf16, 2, 3, plan::Recompute::selective);
  // tp 2 halves the heads, 3 samples: 3.22e9 FLOPs at 200 TFLOP/s forward, twice them at 100
  // backward; the projection 1e12 * 3 / 2 FLOPs at the 1e15 peak, twice backward; no softmax.
  const double core = core_flops * 3 / 2, projection = 1e12 * 3 / 2;
  CHECK(cost.forward_s == doctest::Approx(core / 2e14 + projection / 1e15));
  CHECK(cost.backward_s == doctest::Approx(2 * core / 1e14 + 2 * projection / 1e15));
  CHECK(cost.forward_flops == doctest::Approx(core + projection));
  CHECK(cost.recompute_s == doctest::Approx(core / 2e14));  // selective: the attention core again
  CHECK(cost.backward_weight_s == doctest::Approx(projection / 1e15));
}

TEST_CASE("without rates, or without flash attention, the GEMM curve and the softmax price it") {
  plan::DeviceProfile p = test::flat_profile(1e15, 1e12);
  p.framework_memory.attention = plan::AttentionImplementation::flash;
  const double gemms = (4.0 * 1024 * 1024 * 64 * 8 + 1e12) * 3 / 2, softmax = 1e9 * 3 / 2 / 1e12;
  const LayerCost plain = layer_cost(attention_layer(), p, plan::Precision::bf16, 2, 3, plan::Recompute::none);
  CHECK(plain.forward_s == doctest::Approx(gemms / 1e15 + softmax));
  p.flash_attention.rates = {{64, 2e14, 1e14}};
  p.framework_memory.attention = plan::AttentionImplementation::fused_softmax;
  const LayerCost fused = layer_cost(attention_layer(), p, plan::Precision::bf16, 2, 3, plan::Recompute::none);
  CHECK(fused.forward_s == doctest::Approx(plain.forward_s));
}

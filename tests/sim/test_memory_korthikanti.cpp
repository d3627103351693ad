// File: test_memory_korthikanti.cpp
// The activation memory per transformer layer against Korthikanti et al. 2022, Table 2, on a
// hand-sized GPT block, for every combination of tensor parallelism, sequence parallelism and
// recomputation.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/plan/model.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/op_cost.h"

using namespace whale;
using namespace whale::sim;

namespace {

// One GPT block with s = 16, h = 8, a = 2, ffn 4h, 2-byte elements, one sample: sbh = 128
// and 5as/h = 20.
plan::Layer tiny_block() {
  plan::Model m;
  m.name = "tiny";
  m.family = "gpt";
  m.num_layers = 1;
  m.hidden = 8;
  m.heads = 2;
  m.ffn_hidden = 32;
  m.sequence = 16;
  m.vocabulary = 32;
  m.training.precision = plan::Precision::fp16;
  plan::generate_layers(m, plan::Precision::fp16);
  return m.layers.at(1);
}

}  // namespace

TEST_CASE("Korthikanti 2022 Table 2: activations per layer under each strategy") {
  const plan::Layer block = tiny_block();
  using R = plan::Recompute;
  // No parallelism: sbh (34 + 5as/h) = 128 * 54.
  CHECK(kept_activation_bytes(block, 1, R::none) == doctest::Approx(6912));
  // Tensor parallelism, t = 2: sbh (10 + 24/t + 5as/(ht)) = 128 * (10 + 12 + 10).
  CHECK(kept_activation_bytes(block, 2, R::none) == doctest::Approx(4096));
  // Tensor + sequence parallelism: sbh/t (34 + 5as/h) = 64 * 54.
  CHECK(kept_activation_bytes(block, 2, R::none, true) == doctest::Approx(3456));
  // Tensor parallelism + selective recomputation: sbh (10 + 24/t) = 128 * 22.
  CHECK(kept_activation_bytes(block, 2, R::selective) == doctest::Approx(2816));
  // Tensor + sequence parallelism + selective recomputation: sbh/t 34 = 64 * 34.
  CHECK(kept_activation_bytes(block, 2, R::selective, true) == doctest::Approx(2176));
  // Full recomputation keeps the input, 2sbh, sharded along the sequence under sequence
  // parallelism.
  CHECK(kept_activation_bytes(block, 2, R::full) == doctest::Approx(256));
  CHECK(kept_activation_bytes(block, 2, R::full, true) == doctest::Approx(128));
  // Recomputing one layer materialises what it would keep without recomputation (full) or
  // the attention part 5as^2/t and the core's output 2sh/t (selective: 1280 + 128).
  CHECK(recompute_transient_bytes(block, 2, R::full, true) == doctest::Approx(3456));
  CHECK(recompute_transient_bytes(block, 2, R::selective, true) == doctest::Approx(1408));
}

TEST_CASE("sequence parallelism shards the layernorm, dropout and residual ops along the sequence") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.memory_efficiency = plan::EfficiencyCurve({{1e5, 0.5}, {1e9, 0.5}});
  const plan::MemoryOp norm{"layernorm1", 1e6, false};
  CHECK(memory_kernel_s(norm, p, 4, 2) == doctest::Approx(2e6 / 0.5e12));
  CHECK(memory_kernel_s(norm, p, 4, 2, true) == doctest::Approx(0.5e6 / 0.5e12));
  const plan::MemoryOp gelu{"mlp_gelu", 1e6, true};
  CHECK(memory_kernel_s(gelu, p, 4, 2, true) == doctest::Approx(0.5e6 / 0.5e12));
}

// File: test_op_cost_op_bandwidth.cpp
// Memory ops and the optimizer step of a class the profile measured as compute-bound take
// bytes / the measured op bandwidth of the pass, not the memory roofline.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/op_cost.h"

using namespace whale;
using namespace whale::sim;

TEST_CASE("a memory op of a measured class takes bytes / its op bandwidth") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.memory_efficiency = plan::EfficiencyCurve({{1e6, 0.5}, {1e9, 0.5}});
  p.op_bandwidth_bytes_per_s["gelu"] = 1e9;
  const plan::MemoryOp gelu{"mlp_gelu", 1e6, true};
  CHECK(memory_kernel_s(gelu, p, 2, 3) == doctest::Approx(1.5e6 / 1e9));  // split over tp 2
  const plan::MemoryOp norm{"layernorm1", 1e6, false};
  CHECK(memory_kernel_s(norm, p, 2, 3) == doctest::Approx(3e6 / 0.5e12));  // still the roofline
  // In a layer the measured time counts once forward and once backward.
  plan::Layer layer;
  layer.memory_ops.push_back(gelu);
  const LayerCost cost = layer_cost(layer, p, plan::Precision::fp32, 1, 1, plan::Recompute::none);
  CHECK(cost.forward_s == doctest::Approx(1e-3));
  CHECK(cost.backward_s == doctest::Approx(1e-3));
}

TEST_CASE("a measured class's backward takes bytes / its backward figure; a memory-bound op the same both ways") {
  plan::DeviceProfile p = test::flat_profile(1e14, 1e12);
  p.memory_efficiency = plan::EfficiencyCurve({{1e6, 0.5}, {1e9, 0.5}});
  p.kernel_launch_s = 0;
  p.op_bandwidth_bytes_per_s["layernorm"] = 4e9;
  p.op_backward_bandwidth_bytes_per_s["layernorm"] = 0.5e9;
  const plan::MemoryOp norm{"layernorm1", 1e6, false};
  CHECK(memory_kernel_s(norm, p, 2, 3) == doctest::Approx(3e6 / 4e9));
  CHECK(memory_kernel_s(norm, p, 2, 3, false, Pass::backward) == doctest::Approx(3e6 / 0.5e9));
  // Sequence parallelism shards the op in both passes.
  CHECK(memory_kernel_s(norm, p, 2, 3, true, Pass::backward) == doctest::Approx(1.5e6 / 0.5e9));
  const plan::MemoryOp residual{"residual1", 1e6, false};
  CHECK(memory_kernel_s(residual, p, 1, 1, false, Pass::backward) == doctest::Approx(1e6 / 0.5e12));
  // A layer: the norm 0.25 ms forward and 2 ms backward, the residual 2 us each way.
  plan::Layer layer;
  layer.memory_ops = {norm, residual};
  const LayerCost cost = layer_cost(layer, p, plan::Precision::fp32, 1, 1, plan::Recompute::none);
  CHECK(cost.forward_s == doctest::Approx(0.25e-3 + 2e-6));
  CHECK(cost.backward_s == doctest::Approx(2e-3 + 2e-6));
}

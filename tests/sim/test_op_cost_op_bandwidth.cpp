// File: test_op_cost_op_bandwidth.cpp
// Memory ops and the optimizer step of a class the profile measured as compute-bound take
// bytes / the measured op bandwidth, not the memory roofline.
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

// File: test_measured_layer_time.cpp
// The rule that prices a layer from measured layer times (measured_layer_time.h) on hand-checked
// numbers, and layer_cost on a tiny layer and profile: measured sums, the ops' shares scaled to
// them, recomputation, and which calibrated figures still apply.
#include <doctest/doctest.h>

#include "whale/plan/model.h"
#include "whale/sim/measured_layer_time.h"
#include "whale/sim/op_cost.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// A modelled layer: forward 0.5 + mb seconds, backward 1 + 2 mb.
LayerTimePair modelled(double micro_batch) { return {0.5 + micro_batch, 1 + 2 * micro_batch}; }

plan::MeasuredLayerTime measured(double micro_batch, Seconds forward_s, Seconds backward_s) {
  plan::MeasuredLayerTime m;
  m.kind = plan::LayerKind::transformer;
  m.micro_batch = micro_batch;
  m.forward_s = forward_s;
  m.backward_s = backward_s;
  return m;
}

void check_time(const std::optional<LayerTimePair>& t, Seconds forward_s, Seconds backward_s) {
  REQUIRE(t);
  CHECK(t->forward_s == doctest::Approx(forward_s).epsilon(1e-12));
  CHECK(t->backward_s == doctest::Approx(backward_s).epsilon(1e-12));
}

/// 1 Tflop/s fp32, 1 GB/s memory, no launch cost, flat curves.
plan::DeviceProfile tiny_profile() {
  plan::DeviceProfile p;
  p.name = "tiny";
  p.kind = "cpu";
  p.peak_flops_per_s[plan::Precision::fp32] = 1e12;
  p.memory_bandwidth_bytes_per_s = 1e9;
  return p;
}

/// Per sample: a 1 Gflop GEMM (1 ms on tiny, has weights) and a 1 MB softmax (1 ms, the
/// attention core).
plan::Layer tiny_layer() {
  plan::Layer layer;
  layer.kind = plan::LayerKind::transformer;
  layer.gemms.push_back({"mlp_fc", 1000, 500, 1000, 1, true});
  layer.memory_ops.push_back({"attn_softmax", 1e6, true});
  return layer;
}

}  // namespace

TEST_CASE("no measurement: the curve prices the layer") {
  CHECK_FALSE(measured_layer_time({}, 2, modelled));
}

TEST_CASE("an exact micro-batch match takes the measured times") {
  check_time(measured_layer_time({measured(2, 3, 5), measured(4, 7, 11)}, 4, modelled), 7, 11);
}

TEST_CASE("one measured micro-batch scales the curve by measured / modelled") {
  // modelled(4) = {4.5, 9}, modelled(2) = {2.5, 5}: 4.5 x 5 / 2.5 and 9 x 10 / 5.
  check_time(measured_layer_time({measured(2, 5, 10)}, 4, modelled), 9, 18);
}

TEST_CASE("two or more measured micro-batches interpolate and extrapolate linearly") {
  const std::vector<plan::MeasuredLayerTime> shape = {measured(2, 3, 6), measured(4, 5, 10), measured(8, 13, 18)};
  check_time(measured_layer_time(shape, 3, modelled), 4, 8);     // between 2 and 4
  check_time(measured_layer_time(shape, 6, modelled), 9, 14);    // between 4 and 8
  check_time(measured_layer_time(shape, 10, modelled), 17, 22);  // beyond 8: the line of 4 and 8
  check_time(measured_layer_time(shape, 1, modelled), 2, 4);     // below 2: the line of 2 and 4
}

TEST_CASE("an extrapolation to a time <= 0 falls back to the ratio of the nearest measurement") {
  // Forward: the line through (2, 1) and (4, 5) is -1 at 1, so 1 x modelled(1) / modelled(2) =
  // 1 x 1.5 / 2.5. Backward: the line through (2, 6) and (4, 10) gives 4 at 1.
  check_time(measured_layer_time({measured(2, 1, 6), measured(4, 5, 10)}, 1, modelled), 0.6, 4);
}

TEST_CASE("layer_cost scales the ops of a measured layer to the measured sums") {
  plan::DeviceProfile profile = tiny_profile();
  const plan::Layer layer = tiny_layer();
  // The curve at 2 samples: GEMM 2 ms, softmax 2 ms; forward 4 ms, backward 2 x 2 + 2 = 6 ms,
  // weight gradients 2 ms, attention core 2 ms.
  const LayerCost curve = layer_cost(layer, profile, plan::Precision::fp32, 1, 2, plan::Recompute::none);
  CHECK(curve.forward_s == doctest::Approx(4e-3));
  CHECK(curve.backward_s == doctest::Approx(6e-3));
  CHECK_FALSE(curve.measured);

  profile.layer_times.source = "layer_times.csv";
  profile.layer_times.measurements = {measured(2, 8e-3, 9e-3)};
  profile.calibration.gemm_efficiency_scale = 0.5;   // already in the measured time
  profile.calibration.layer_overhead_s = 1e-3;       // still added
  const LayerCost full = layer_cost(layer, profile, plan::Precision::fp32, 1, 2, plan::Recompute::full);
  CHECK(full.measured);
  CHECK(full.forward_s == doctest::Approx(9e-3));
  CHECK(full.backward_s == doctest::Approx(10e-3));
  CHECK(full.backward_weight_s == doctest::Approx(3e-3));  // 2 ms x 9 / 6
  CHECK(full.recompute_s == doctest::Approx(9e-3));        // the measured forward again
  CHECK(full.forward_flops == doctest::Approx(2e9));       // flops stay the model's
  const LayerCost selective = layer_cost(layer, profile, plan::Precision::fp32, 1, 2, plan::Recompute::selective);
  CHECK(selective.recompute_s == doctest::Approx(4e-3));   // 2 ms x 8 / 4

  // tp 2 was not measured: the calibrated curve (GEMM 1 ms / 0.5, softmax 1 ms, overhead 1 ms).
  const LayerCost other = layer_cost(layer, profile, plan::Precision::fp32, 2, 2, plan::Recompute::none);
  CHECK_FALSE(other.measured);
  CHECK(other.forward_s == doctest::Approx(4e-3));
}

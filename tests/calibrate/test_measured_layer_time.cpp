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

plan::MeasuredLayerTime measured(double micro_batch, Seconds forward_s, Seconds backward_s, int tp = 1) {
  plan::MeasuredLayerTime m;
  m.kind = plan::LayerKind::transformer;
  m.tp = tp;
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

/// The modelled layer at any tp: forward 0.5 + mb / tp seconds, backward 1 + 2 mb / tp.
LayerTimePair modelled_at_tp(int tp, double micro_batch) { return modelled(micro_batch / tp); }

TEST_CASE("one measurement at a tp scales by another tp's measured line at equal work per rank") {
  plan::LayerTimes times;
  // tp 1: forward 1 + x, backward 1 + 2x (measured at 1 and 4); tp 2: one measurement at 8.
  times.measurements = {measured(1, 2, 3), measured(8, 10, 20, 2), measured(4, 5, 9)};
  // tp 2 over 2 samples does the work of tp 1 over 1, and over 8 that of tp 1 over 4:
  // forward 10 x 2 / 5, backward 20 x 3 / 9.
  check_time(measured_layer_time(times, plan::LayerKind::transformer, 2, 2, modelled_at_tp), 4, 20.0 / 3);
  // tp 1 has its own line; an exact tp 2 match is the measurement.
  check_time(measured_layer_time(times, plan::LayerKind::transformer, 1, 2, modelled_at_tp), 3, 5);
  check_time(measured_layer_time(times, plan::LayerKind::transformer, 2, 8, modelled_at_tp), 10, 20);
  // Nothing at tp 4, and nothing of another kind.
  CHECK_FALSE(measured_layer_time(times, plan::LayerKind::transformer, 4, 2, modelled_at_tp));
  CHECK_FALSE(measured_layer_time(times, plan::LayerKind::head, 1, 2, modelled_at_tp));

  // tp 4 gets a line too (forward 2 + 2x, backward 4 + 4x): as near to tp 2 as tp 1, so the
  // smaller degree, tp 1, still gives the shape.
  times.measurements.push_back(measured(1, 4, 8, 4));
  times.measurements.push_back(measured(2, 6, 12, 4));
  check_time(measured_layer_time(times, plan::LayerKind::transformer, 2, 2, modelled_at_tp), 4, 20.0 / 3);
  // Without tp 1's line, tp 4's: tp 2 over 2 and 8 samples do the work of tp 4 over 4 and 16:
  // forward 10 x 10 / 34, backward 20 x 20 / 68.
  times.measurements.erase(times.measurements.begin());
  check_time(measured_layer_time(times, plan::LayerKind::transformer, 2, 2, modelled_at_tp), 100.0 / 34,
             400.0 / 68);
}

TEST_CASE("one measurement with no other tp's line scales by the curve at its own tp") {
  plan::LayerTimes times;
  times.measurements = {measured(4, 5, 10, 2), measured(1, 2, 3)};  // tp 1 has no line
  // modelled_at_tp(2, 2) = {1.5, 3}, (2, 4) = {2.5, 5}: 5 x 1.5 / 2.5 and 10 x 3 / 5.
  check_time(measured_layer_time(times, plan::LayerKind::transformer, 2, 2, modelled_at_tp), 3, 6);
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

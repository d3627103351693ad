// File: test_calibration_apply.cpp
// The simulator honours a profile's fitted calibration exactly: GEMM efficiency scale, memory-op
// scale, per-kernel, per-layer and per-step overheads, memory reserve, GEMM shape-class scales;
// defaults change nothing.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/sim/calibration.h"
#include "whale/sim/op_cost.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// One device, one layer: a 1000^3 GEMM (2e9 flops forward, 2e-5 s at 1e14) and a 1e6-byte
/// memory op (1e-6 s at 1e12 B/s) per sample, one sample, no parameters (no optimizer time).
plan::Plan one_layer_plan(const plan::ProfileCalibration& calibration) {
  plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
  profile.calibration = calibration;
  const plan::Cluster cluster = test::make_cluster(1, 1, profile, test::link(1e11, 0), test::link(1e10, 0));
  return test::pipeline_plan(cluster, {test::gemm_layer(1000, 1000, 1000, 1e6)},
                             plan::ScheduleKind::one_f_one_b, 1);
}

double step_s(const plan::ProfileCalibration& calibration) {
  return Simulator().evaluate(one_layer_plan(calibration), {}).step_time_s;
}

}  // namespace

TEST_CASE("a default calibration leaves the step as the profile predicts it") {
  // Forward 2e-5 + 1e-6, backward 4e-5 + 1e-6.
  CHECK(step_s({}) == doctest::Approx(6.2e-5));
}

TEST_CASE("each fitted figure changes the step by exactly its share") {
  plan::ProfileCalibration c;
  c.gemm_efficiency_scale = 2;  // GEMMs take half: 3e-5 + 2e-6
  CHECK(step_s(c) == doctest::Approx(3.2e-5));
  c.memory_op_time_scale = 3;  // memory ops take 3x: 3e-5 + 6e-6
  CHECK(step_s(c) == doctest::Approx(3.6e-5));
  c.kernel_overhead_s = 1e-6;  // 2 kernels forward, 3 backward
  CHECK(step_s(c) == doctest::Approx(4.1e-5));
  c.layer_overhead_s = 1e-5;  // once forward, once backward
  CHECK(step_s(c) == doctest::Approx(6.1e-5));
  c.step_overhead_s = 1e-3;
  CHECK(step_s(c) == doctest::Approx(1.061e-3));
  c.micro_batch_overhead_s = 2e-5;  // the one micro-batch: once forward, once backward
  CHECK(step_s(c) == doctest::Approx(1.101e-3));
}

TEST_CASE("the memory reserve adds to every device's predicted peak memory") {
  const plan::Estimate plain = Simulator().evaluate(one_layer_plan({}), {});
  plan::ProfileCalibration c;
  c.memory_reserve_bytes = 5e9;
  const plan::Estimate reserved = Simulator().evaluate(one_layer_plan(c), {});
  REQUIRE(reserved.devices.size() == 1);
  CHECK(reserved.devices[0].peak_memory_bytes == plain.devices[0].peak_memory_bytes + 5e9);
  // The flat profile's whole capacity: fits exactly with the layer's tensors, one byte more not.
  c.memory_reserve_bytes = 80e9 - plain.devices[0].peak_memory_bytes;
  CHECK(plain.fits);
  CHECK(Simulator().evaluate(one_layer_plan(c), {}).fits);
  c.memory_reserve_bytes += 1;
  CHECK_FALSE(Simulator().evaluate(one_layer_plan(c), {}).fits);
}

TEST_CASE("a GEMM shape-class scale changes only the GEMMs of its class") {
  // The layer's GEMM has 2e9 flops: medium (1e8 <= flops < 1e10).
  plan::ProfileCalibration c;
  c.gemm_small_scale = 2;
  c.gemm_large_scale = 5;
  CHECK(step_s(c) == doctest::Approx(6.2e-5));  // other classes: unchanged
  c.gemm_medium_scale = 2;  // GEMMs take half: 3e-5 + 2e-6
  CHECK(step_s(c) == doctest::Approx(3.2e-5));
  c.gemm_efficiency_scale = 2;  // both scales multiply: GEMMs take a quarter, 1.5e-5 + 2e-6
  CHECK(step_s(c) == doctest::Approx(1.7e-5));
}

TEST_CASE("GEMM shape classes split at 1e8 and 1e10 flops of one kernel") {
  plan::ProfileCalibration c;
  c.gemm_small_scale = 2;
  c.gemm_medium_scale = 3;
  c.gemm_large_scale = 5;
  CHECK(gemm_shape_scale(1e8 - 1, c) == 2);
  CHECK(gemm_shape_scale(1e8, c) == 3);
  CHECK(gemm_shape_scale(1e10 - 1, c) == 3);
  CHECK(gemm_shape_scale(1e10, c) == 5);
}

TEST_CASE("the per-micro-batch overhead adds to every stage's forward and backward of every micro-batch") {
  // Two equal stages, no transfer time, 4 micro-batches: GPipe and 1F1B both take
  // (m + p - 1) x (forward + backward), so o per pass adds (4 + 2 - 1) x 2o = 10o.
  for (const plan::ScheduleKind kind : {plan::ScheduleKind::gpipe, plan::ScheduleKind::one_f_one_b}) {
    plan::ProfileCalibration c;
    const auto pipeline_step_s = [&] {
      plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
      profile.calibration = c;
      const plan::Cluster cluster = test::make_cluster(1, 2, profile, test::link(1e11, 0), test::link(1e10, 0));
      const plan::Layer layer = test::gemm_layer(1000, 1000, 1000, 1e6);
      return Simulator().evaluate(test::pipeline_plan(cluster, {layer, layer}, kind, 4), {}).step_time_s;
    };
    const Seconds plain_s = pipeline_step_s();
    CHECK(plain_s == doctest::Approx(5 * 6.2e-5));
    c.micro_batch_overhead_s = 1e-5;
    CHECK(pipeline_step_s() == doctest::Approx(plain_s + 10 * 1e-5));
  }
}

TEST_CASE("a measured optimizer step per parameter prices the optimizer step") {
  // The one-layer plan with 1e6 parameters on its one device: 6.2e-5 s of compute, then the
  // optimizer: 1e6 x 1e-9 s.
  plan::DeviceProfile profile = test::flat_profile(1e14, 1e12);
  profile.layer_times.source = "megatron.log";
  profile.layer_times.optimizer_s_per_parameter = 1e-9;
  const plan::Cluster cluster = test::make_cluster(1, 1, profile, test::link(1e11, 0), test::link(1e10, 0));
  const plan::Plan p = test::pipeline_plan(cluster, {test::gemm_layer(1000, 1000, 1000, 1e6, 1e6)},
                                           plan::ScheduleKind::one_f_one_b, 1);
  CHECK(Simulator().evaluate(p, {}).step_time_s == doctest::Approx(6.2e-5 + 1e-3));
}

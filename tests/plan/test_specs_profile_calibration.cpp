// File: test_specs_profile_calibration.cpp
// The optional calibration block of a device profile (whale-calibrate's fitted figures): exact
// loaded values in SI units, defaults when absent, save/load, and bad values.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_specs_util.h"
#include "whale/plan/device_profile.h"

using namespace whale::plan;
using whale::plan::testing::kCoreProfile;
using whale::plan::testing::scratch_file;

TEST_CASE("a calibration block loads in SI units; without it every figure is the default") {
  const DeviceProfile p = load_device_profile(scratch_file(
      "calibration/core.yaml",
      kCoreProfile + "calibration: {source: fitted, gemm_efficiency_scale: 1.25, memory_op_time_scale: 0.5,\n"
                     "  kernel_overhead_us: 2, layer_overhead_us: 30, step_overhead_us: 4000,\n"
                     "  memory_reserve_gib: 0.5}\n"));
  CHECK(p.calibration.source == "fitted");
  CHECK(p.calibration.gemm_efficiency_scale == 1.25);
  CHECK(p.calibration.memory_op_time_scale == 0.5);
  CHECK(p.calibration.kernel_overhead_s == doctest::Approx(2e-6));
  CHECK(p.calibration.layer_overhead_s == doctest::Approx(30e-6));
  CHECK(p.calibration.step_overhead_s == doctest::Approx(4e-3));
  CHECK(p.calibration.memory_reserve_bytes == 0.5 * 1024.0 * 1024.0 * 1024.0);
  CHECK_FALSE(p.calibration.is_default());
  const DeviceProfile plain = load_device_profile(scratch_file("calibration-none/core.yaml", kCoreProfile));
  CHECK(plain.calibration.is_default());
  CHECK(plain.calibration.gemm_efficiency_scale == 1.0);
}

TEST_CASE("a calibration survives save and load; a default one is not written") {
  DeviceProfile p = load_device_profile(scratch_file("calibration-save/core.yaml", kCoreProfile));
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/calibration-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  CHECK(load_device_profile(folder + "/core.yaml").calibration.is_default());
  p.calibration.source = "fitted from a, b";
  p.calibration.gemm_efficiency_scale = 0.75;
  p.calibration.step_overhead_s = 0.125;
  p.calibration.memory_reserve_bytes = 1024.0 * 1024.0 * 1024.0;
  save_device_profile(p, folder + "/core.yaml");
  const ProfileCalibration back = load_device_profile(folder + "/core.yaml").calibration;
  CHECK(back.source == "fitted from a, b");
  CHECK(back.gemm_efficiency_scale == 0.75);
  CHECK(back.step_overhead_s == doctest::Approx(0.125));
  CHECK(back.memory_reserve_bytes == doctest::Approx(1024.0 * 1024.0 * 1024.0));
  CHECK(back.memory_op_time_scale == 1.0);
}

TEST_CASE("a bad calibration figure names the file and the field") {
  const std::string zero = scratch_file("calibration-zero/core.yaml",
                                        kCoreProfile + "calibration: {gemm_efficiency_scale: 0}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(zero); }, zero, "calibration.gemm_efficiency_scale", "positive");
  const std::string negative = scratch_file("calibration-negative/core.yaml",
                                            kCoreProfile + "calibration: {step_overhead_us: -1}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(negative); }, negative, "calibration.step_overhead_us", "");
  const std::string unknown = scratch_file("calibration-unknown/core.yaml",
                                           kCoreProfile + "calibration: {step_overhead_s: 1}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(unknown); }, unknown, "calibration.step_overhead_s", "unknown key");
}

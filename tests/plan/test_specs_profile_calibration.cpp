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
                     "  micro_batch_overhead_us: 250, memory_reserve_gib: 0.5}\n"));
  CHECK(p.calibration.source == "fitted");
  CHECK(p.calibration.gemm_efficiency_scale == 1.25);
  CHECK(p.calibration.memory_op_time_scale == 0.5);
  CHECK(p.calibration.kernel_overhead_s == doctest::Approx(2e-6));
  CHECK(p.calibration.layer_overhead_s == doctest::Approx(30e-6));
  CHECK(p.calibration.step_overhead_s == doctest::Approx(4e-3));
  CHECK(p.calibration.micro_batch_overhead_s == doctest::Approx(250e-6));
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
  p.calibration.micro_batch_overhead_s = 0.0625;
  p.calibration.memory_reserve_bytes = 1024.0 * 1024.0 * 1024.0;
  save_device_profile(p, folder + "/core.yaml");
  const ProfileCalibration back = load_device_profile(folder + "/core.yaml").calibration;
  CHECK(back.source == "fitted from a, b");
  CHECK(back.gemm_efficiency_scale == 0.75);
  CHECK(back.step_overhead_s == doctest::Approx(0.125));
  CHECK(back.micro_batch_overhead_s == doctest::Approx(0.0625));
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

TEST_CASE("per link kind and per GEMM shape class figures load, save and default") {
  const DeviceProfile p = load_device_profile(scratch_file(
      "calibration-links/core.yaml",
      kCoreProfile + "calibration:\n  gemm_shape_scale: {small: 0.5, large: 2}\n"
                     "  links: {ethernet: {bandwidth_scale: 0.6, latency_us: 20}, shm: {latency_us: 3}}\n"));
  CHECK(p.calibration.gemm_small_scale == 0.5);
  CHECK(p.calibration.gemm_medium_scale == 1.0);
  CHECK(p.calibration.gemm_large_scale == 2);
  REQUIRE(p.calibration.links.size() == 2);
  CHECK(p.calibration.links.at("ethernet").bandwidth_scale == 0.6);
  CHECK(p.calibration.links.at("ethernet").latency_s == doctest::Approx(20e-6));
  CHECK(p.calibration.links.at("shm").bandwidth_scale == 1.0);
  CHECK(p.calibration.links.at("shm").latency_s == doctest::Approx(3e-6));
  CHECK_FALSE(p.calibration.is_default());
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/calibration-links-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  const ProfileCalibration back = load_device_profile(folder + "/core.yaml").calibration;
  CHECK(back.gemm_small_scale == 0.5);
  CHECK(back.gemm_large_scale == 2);
  CHECK(back.links.at("ethernet") == p.calibration.links.at("ethernet"));
  CHECK(back.links.at("shm").latency_s == doctest::Approx(3e-6));
}

TEST_CASE("a bad link or shape-class figure names the file and the field") {
  const auto check = [](const std::string& name, const std::string& block, const std::string& field,
                        const std::string& text) {
    const std::string path = scratch_file("calibration-" + name + "/core.yaml", kCoreProfile + block);
    CHECK_SPEC_ERROR([&] { load_device_profile(path); }, path, field, text);
  };
  check("link-zero", "calibration: {links: {ethernet: {bandwidth_scale: 0}}}\n",
        "calibration.links.ethernet.bandwidth_scale", "positive");
  check("link-latency", "calibration: {links: {ethernet: {latency_us: -2}}}\n",
        "calibration.links.ethernet.latency_us", "");
  check("link-key", "calibration: {links: {ethernet: {bandwidth_gbps: 5}}}\n",
        "calibration.links.ethernet.bandwidth_gbps", "unknown key");
  check("link-list", "calibration: {links: [ethernet]}\n", "calibration.links", "link kind");
  check("shape-zero", "calibration: {gemm_shape_scale: {medium: 0}}\n", "calibration.gemm_shape_scale.medium",
        "positive");
  check("shape-key", "calibration: {gemm_shape_scale: {huge: 2}}\n", "calibration.gemm_shape_scale.huge",
        "unknown key");
}

TEST_CASE("a measured optimizer step per parameter in the layer_times block survives save and load") {
  DeviceProfile p = load_device_profile(scratch_file(
      "layer-times-optimizer/core.yaml",
      kCoreProfile + "layer_times: {source: run.log, optimizer_s_per_parameter: 2.5e-8, measurements: [\n"
                     "  {layer_kind: transformer, tp: 1, micro_batch: 2, forward_s: 0.01, backward_s: 0.02}]}\n"));
  CHECK(p.layer_times.optimizer_s_per_parameter == 2.5e-8);
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/layer-times-optimizer-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  CHECK(load_device_profile(folder + "/core.yaml").layer_times.optimizer_s_per_parameter == 2.5e-8);
  const std::string zero = scratch_file(
      "layer-times-optimizer-zero/core.yaml",
      kCoreProfile + "layer_times: {source: run.log, optimizer_s_per_parameter: 0, measurements: [\n"
                     "  {layer_kind: transformer, tp: 1, micro_batch: 2, forward_s: 0.01, backward_s: 0.02}]}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(zero); }, zero, "layer_times.optimizer_s_per_parameter", "positive");
}

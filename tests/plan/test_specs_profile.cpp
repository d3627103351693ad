// File: test_specs_profile.cpp
// Device profiles: efficiency-curve interpolation, exact per-precision peaks, exact loaded figures, the
// save/load round trip and bad profiles.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_specs_util.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/framework_precision.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

namespace {

const char* kToyProfile =
    "name: toy\nkind: gpu\nsource: test\nmemory_gib: 4\nmemory_bandwidth_gbytes_per_s: 100\n"
    "peak_tflops: {fp32: 10, fp16: 40}\nkernel_launch_us: 4\n"
    "gemm_efficiency:\n  fp16: [{gflop: 1, efficiency: 0.2}, {gflop: 100, efficiency: 0.6}]\n"
    "memory_efficiency: [{mib: 1, efficiency: 0.5}]\n";

std::string toy_with(const std::string& from, const std::string& to) {
  std::string text = kToyProfile;
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("EfficiencyCurve interpolates in log(size) and clamps") {
  const EfficiencyCurve curve({{1e11, 0.6}, {1e9, 0.2}});  // given unsorted
  REQUIRE(curve.points().size() == 2);
  CHECK(curve.points()[0].size == 1e9);
  CHECK(curve.at(1e10) == doctest::Approx(0.4));         // log midpoint
  CHECK(curve.at(std::pow(10.0, 9.5)) == doctest::Approx(0.3));  // a quarter of the way in log
  CHECK(curve.at(1e8) == 0.2);
  CHECK(curve.at(1e9) == 0.2);
  CHECK(curve.at(1e12) == 0.6);
  CHECK(EfficiencyCurve().at(123) == 1.0);
  const EfficiencyCurve three({{1, 0.1}, {10, 0.5}, {100, 0.9}});
  CHECK(three.at(10) == doctest::Approx(0.5));
  CHECK(three.at(std::sqrt(1000.0)) == doctest::Approx(0.7));
}

TEST_CASE("a profile loads with exact figures") {
  const DeviceProfile a100 = load_device_profile("profiles/a100-sxm4-80gb.yaml");
  CHECK(a100.name == "a100-sxm4-80gb");
  CHECK(a100.kind == "gpu");
  CHECK(a100.memory_bytes == 80.0 * 1024 * 1024 * 1024);
  CHECK(a100.memory_bandwidth_bytes_per_s == 2039e9);
  CHECK(a100.peak(Precision::bf16) == 312e12);
  CHECK(a100.peak(Precision::tf32) == 156e12);
  CHECK(a100.kernel_launch_s == doctest::Approx(5e-6));
  CHECK(a100.slowdown_factor == 1.0);
  CHECK(a100.gemm_curve(Precision::bf16).points().front().size == doctest::Approx(1e6));
  CHECK(a100.memory_efficiency.points().front().size == doctest::Approx(0.01 * 1024 * 1024));
}

TEST_CASE("peaks and curves are exact per precision; the fallbacks are the effective precision's") {
  const DeviceProfile toy = load_device_profile(scratch_file("profiles-a/toy.yaml", kToyProfile));
  CHECK(toy.peak(Precision::fp16) == 40e12);
  CHECK_THROWS_AS(toy.peak(Precision::bf16), whale::Error);
  CHECK_THROWS_AS(toy.peak(Precision::tf32), whale::Error);
  CHECK(toy.gemm_curve(Precision::fp16).at(10e9) == doctest::Approx(0.4));
  CHECK(toy.gemm_curve(Precision::bf16).empty());
  CHECK(toy.gemm_curve(Precision::fp32).empty());
  // bf16 and tf32 GEMMs run as fp32 on it (docs/profile.md#fallbacks).
  CHECK(effective_gemm_precision(Precision::bf16, {}, toy) == Precision::fp32);
  CHECK(effective_gemm_precision(Precision::tf32, {}, toy) == Precision::fp32);
  // cpu-measured's profile is whale-profile's measurement of fp32 alone: no bf16, no fp16.
  const DeviceProfile cpu = load_device_profile("profiles/cpu-measured.yaml");
  const whale::Error e = whale::plan::testing::expect_error([&] { cpu.peak(Precision::bf16); });
  CHECK(e.yaml_path() == "peak_tflops.bf16");
  CHECK(std::string(e.what()).find("device 'cpu-measured' has no peak for bf16") != std::string::npos);
}

TEST_CASE("a profile survives save and load") {
  const DeviceProfile original = load_device_profile("profiles/h100-sxm-80gb.yaml");
  DeviceProfile slowed = original;
  slowed.slowdown_factor = 2.5;
  std::filesystem::create_directories(std::string(WHALE_BINARY_DIR) + "/specs-scratch/saved");
  const std::string path = std::string(WHALE_BINARY_DIR) + "/specs-scratch/saved/h100-sxm-80gb.yaml";
  save_device_profile(slowed, path);
  const DeviceProfile back = load_device_profile(path);
  CHECK(back.name == original.name);
  CHECK(back.source == original.source);
  CHECK(back.memory_bytes == original.memory_bytes);
  CHECK(back.memory_bandwidth_bytes_per_s == original.memory_bandwidth_bytes_per_s);
  CHECK(back.peak_flops_per_s == original.peak_flops_per_s);
  CHECK(back.kernel_launch_s == doctest::Approx(original.kernel_launch_s));
  CHECK(back.slowdown_factor == 2.5);
  REQUIRE(back.gemm_efficiency.size() == original.gemm_efficiency.size());
  const auto& a = back.gemm_curve(Precision::bf16).points();
  const auto& b = original.gemm_curve(Precision::bf16).points();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].size == doctest::Approx(b[i].size));
    CHECK(a[i].efficiency == b[i].efficiency);
  }
  // A second save of what was loaded gives the same bytes.
  const std::string again = std::string(WHALE_BINARY_DIR) + "/specs-scratch/saved/again.yaml";
  save_device_profile(back, again);
  std::ifstream x(path), y(again);
  const std::string tx((std::istreambuf_iterator<char>(x)), {}), ty((std::istreambuf_iterator<char>(y)), {});
  CHECK(tx == ty);
}

TEST_CASE("bad profiles name the field") {
  auto write = [](const std::string& text) { return scratch_file("bad-profiles/toy.yaml", text); };
  std::string p = write(toy_with("name: toy", "name: other"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "name", "expected name 'toy' (the file name)");
  p = write(toy_with("kind: gpu", "kind: tpu"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "kind", "expected gpu or cpu");
  p = write(toy_with("efficiency: 0.6", "efficiency: 1.5"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "gemm_efficiency.fp16[1].efficiency", "expected an efficiency in (0, 1]");
  p = write(toy_with("gflop: 100", "gflop: 0.5"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "gemm_efficiency.fp16[1].gflop", "increasing order");
  p = write(toy_with("fp32: 10, fp16: 40", "fp16: 40"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "peak_tflops.fp32", "missing field 'fp32'");
  p = write(toy_with("fp16: 40}", "fp8: 40}"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "peak_tflops.fp8", "unknown key 'fp8'");
  p = write(toy_with("memory_gib: 4", "memory_gib: -2"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "memory_gib", "expected a positive number, got '-2'");
  p = write(std::string(kToyProfile) + "slowdown_factor: 0.5\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "slowdown_factor", "slowdown_factor >= 1");
}

TEST_CASE("reserves at or above the device memory name the profile, the field and the memory") {
  auto write = [](const std::string& text) { return scratch_file("reserve-profiles/toy.yaml", text); };
  // A gpu profile without framework_memory reserves 2 GiB: the toy's 2 GiB leave nothing.
  std::string p = write(toy_with("memory_gib: 4", "memory_gib: 1.5"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "memory_gib",
                   "expected more than the 2 GiB that a gpu profile reserves for its framework, got 1.5 GiB");
  p = write(toy_with("memory_gib: 4", "memory_gib: 8\nframework_memory: {source: t, reserve_gib: 8}"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "framework_memory.reserve_gib",
                   "expected a reserve below memory_gib (8 GiB), got 8");
  p = write(toy_with("memory_gib: 4", "memory_gib: 8\ncalibration: {memory_reserve_gib: 6.5}"));
  CHECK_SPEC_ERROR([&] { load_device_profile(p); }, p, "calibration.memory_reserve_gib",
                   "expected a reserve below memory_gib less framework_memory.reserve_gib (8 GiB - 2 GiB), got 6.5");
  p = write(toy_with("memory_gib: 4", "memory_gib: 8\ncalibration: {memory_reserve_gib: 5.5}"));
  CHECK(load_device_profile(p).calibration.memory_reserve_bytes == 5.5 * whale::kBytesPerGiB);
}

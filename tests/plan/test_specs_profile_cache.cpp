// File: test_specs_profile_cache.cpp
// The optional cache block of a device profile (warm GEMM curves and op bandwidths, the cache
// per device): exact loaded figures, save/load, bad values, and the cold/warm blend.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_specs_util.h"
#include "whale/plan/cache_warmth.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/input_equality.h"

using namespace whale::plan;
using whale::plan::testing::kCoreProfile;
using whale::plan::testing::scratch_file;

namespace {

const std::string kCache =
    "op_bandwidth_gbytes_per_s: {gelu: 2, adamw: 3}\n"
    "op_backward_bandwidth_gbytes_per_s: {gelu: 1}\n"
    "cache:\n"
    "  last_level_cache_mib_per_device: 16\n"
    "  warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}\n"
    "  warm_op_bandwidth_gbytes_per_s: {gelu: 4}\n"
    "  warm_op_backward_bandwidth_gbytes_per_s: {gelu: 3}\n";

}  // namespace

TEST_CASE("a profile's cache block loads in bytes and survives save and load") {
  const DeviceProfile p = load_device_profile(scratch_file("cache/core.yaml", kCoreProfile + kCache));
  CHECK(p.cache.cache_bytes_per_device == 16.0 * 1024 * 1024);
  CHECK(p.cache.warm_gemm_efficiency.at(Precision::fp32).at(1e9) == 1.0);
  CHECK(p.cache.warm_op_bandwidth_bytes_per_s.at("gelu") == 4e9);
  CHECK(p.cache.warm_op_backward_bandwidth_bytes_per_s.at("gelu") == 3e9);
  CHECK_FALSE(p.cache.empty());
  CHECK(load_device_profile(scratch_file("cache-none/core.yaml", kCoreProfile)).cache.empty());
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/cache-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  CHECK(load_device_profile(folder + "/core.yaml") == p);
}

TEST_CASE("the walked warm fraction by working set loads in bytes, survives save and load, and is checked") {
  const std::string walked = kCache + "  warm_fraction_by_working_set: [{working_set_mib: 4, warm_fraction: 0.75}, "
                                      "{working_set_mib: 32, warm_fraction: 0}]\n";
  const DeviceProfile p = load_device_profile(scratch_file("cache-walk/core.yaml", kCoreProfile + walked));
  REQUIRE(p.cache.warm_fraction_by_working_set.points().size() == 2);
  CHECK(p.cache.warm_fraction_by_working_set.points()[0].size == 4.0 * 1024 * 1024);
  CHECK(p.cache.warm_fraction_by_working_set.at(4.0 * 1024 * 1024) == 0.75);
  CHECK(p.cache.warm_fraction_by_working_set.at(64.0 * 1024 * 1024) == 0.0);
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/cache-walk-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  CHECK(load_device_profile(folder + "/core.yaml") == p);
  CHECK_FALSE(load_device_profile(scratch_file("cache-no-walk/core.yaml", kCoreProfile + kCache)) == p);

  const std::string above = scratch_file(
      "cache-walk-above/core.yaml",
      kCoreProfile + kCache + "  warm_fraction_by_working_set: [{working_set_mib: 4, warm_fraction: 1.5}]\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(above); }, above, "cache.warm_fraction_by_working_set[0].warm_fraction",
                   "expected a number in [0, 1], got '1.5'");
  const std::string unsorted = scratch_file(
      "cache-walk-unsorted/core.yaml",
      kCoreProfile + kCache + "  warm_fraction_by_working_set: [{working_set_mib: 8, warm_fraction: 0.5}, "
                              "{working_set_mib: 4, warm_fraction: 0.9}]\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(unsorted); }, unsorted,
                   "cache.warm_fraction_by_working_set[1].working_set_mib", "increasing order");
}

TEST_CASE("a bad cache block names the file and the field") {
  const std::string negative = scratch_file(
      "cache-bad/core.yaml", kCoreProfile + "cache: {last_level_cache_mib_per_device: -1, "
                                            "warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(negative); }, negative,
                   "cache.last_level_cache_mib_per_device", "positive");
  const std::string unknown = scratch_file(
      "cache-unknown/core.yaml", kCoreProfile + "cache: {last_level_cache_mib: 16, "
                                           "warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(unknown); }, unknown, "cache.last_level_cache_mib", "");
  const std::string no_curve =
      scratch_file("cache-no-curve/core.yaml", kCoreProfile + "cache: {last_level_cache_mib_per_device: 16}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(no_curve); }, no_curve, "cache.warm_gemm_efficiency", "");
  const std::string orphan = scratch_file(
      "cache-backward-orphan/core.yaml",
      kCoreProfile + "cache: {last_level_cache_mib_per_device: 16, "
                     "warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}, "
                     "warm_op_bandwidth_gbytes_per_s: {gelu: 4}, "
                     "warm_op_backward_bandwidth_gbytes_per_s: {softmax: 1}}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(orphan); }, orphan,
                   "cache.warm_op_backward_bandwidth_gbytes_per_s.softmax",
                   "an op class of cache.warm_op_bandwidth_gbytes_per_s, got 'softmax'");
}

TEST_CASE("the warm blend adds times: rates blend harmonically by the warm fraction") {
  const DeviceProfile p = load_device_profile(scratch_file("cache-blend/core.yaml", kCoreProfile + kCache));
  // Cold efficiency 0.5, warm 1: half the time warm is 0.5 * 1/1 + 0.5 * 1/0.5 = 1.5 units of
  // the peak-rate time, efficiency 1 / 1.5.
  const DeviceProfile half = with_warm_fraction(p, 0.5);
  CHECK(half.gemm_curve(Precision::fp32).at(1e9) == doctest::Approx(1.0 / 1.5));
  // gelu: cold 2 GB/s, warm 4: 1 / (0.5 / 4 + 0.5 / 2) = 2.666... GB/s; adamw has no warm figure.
  CHECK(half.op_bandwidth_bytes_per_s.at("gelu") == doctest::Approx(1e9 / (0.5 / 4 + 0.5 / 2)));
  CHECK(half.op_bandwidth_bytes_per_s.at("adamw") == 3e9);
  // gelu's backward: cold 1 GB/s, warm 3: 1 / (0.5 / 3 + 0.5 / 1) = 1.5 GB/s.
  CHECK(half.op_backward_bandwidth("mlp_gelu") == doctest::Approx(1.5e9));
  CHECK(with_warm_fraction(p, 1).gemm_curve(Precision::fp32).at(1e9) == doctest::Approx(1.0));
  CHECK(with_warm_fraction(p, 2).op_bandwidth_bytes_per_s.at("gelu") == doctest::Approx(4e9));  // clamped
  CHECK(with_warm_fraction(p, 0) == p);
  const DeviceProfile plain = load_device_profile(scratch_file("cache-blend-none/core.yaml", kCoreProfile));
  CHECK(with_warm_fraction(plain, 1) == plain);  // no warm figures: priced cold
}

TEST_CASE("the warm blend prices each pass's backward from whichever side measured it apart") {
  // Cold gelu measured as one figure (2 GB/s, no backward of its own); warm split into forward
  // 4 and backward 1. Half warm: the backward blends cold 2 (the forward's, as priced) with warm
  // 1: 1 / (0.5 / 1 + 0.5 / 2) = 1.333... GB/s.
  const DeviceProfile warm_split = load_device_profile(scratch_file(
      "cache-blend-warm-split/core.yaml",
      kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: 2}\n"
                     "cache: {last_level_cache_mib_per_device: 16, "
                     "warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}, "
                     "warm_op_bandwidth_gbytes_per_s: {gelu: 4}, "
                     "warm_op_backward_bandwidth_gbytes_per_s: {gelu: 1}}\n"));
  CHECK(with_warm_fraction(warm_split, 0.5).op_backward_bandwidth("mlp_gelu") ==
        doctest::Approx(1e9 / (0.5 / 1 + 0.5 / 2)));
  // Cold split (forward 2, backward 1), warm one figure (4): the warm backward is the warm
  // figure, 1 / (0.5 / 4 + 0.5 / 1) = 1.6 GB/s.
  const DeviceProfile cold_split = load_device_profile(scratch_file(
      "cache-blend-cold-split/core.yaml",
      kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: 2}\n"
                     "op_backward_bandwidth_gbytes_per_s: {gelu: 1}\n"
                     "cache: {last_level_cache_mib_per_device: 16, "
                     "warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}, "
                     "warm_op_bandwidth_gbytes_per_s: {gelu: 4}}\n"));
  CHECK(with_warm_fraction(cold_split, 0.5).op_backward_bandwidth("mlp_gelu") == doctest::Approx(1.6e9));
  // Neither side split: the backward follows the blended forward, 1 / (0.5 / 4 + 0.5 / 2).
  const DeviceProfile unsplit = load_device_profile(scratch_file(
      "cache-blend-unsplit/core.yaml",
      kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: 2}\n"
                     "cache: {last_level_cache_mib_per_device: 16, "
                     "warm_gemm_efficiency: {fp32: [{gflop: 1, efficiency: 1}]}, "
                     "warm_op_bandwidth_gbytes_per_s: {gelu: 4}}\n"));
  const DeviceProfile unsplit_half = with_warm_fraction(unsplit, 0.5);
  CHECK(unsplit_half.op_backward_bandwidth_bytes_per_s.empty());
  CHECK(unsplit_half.op_backward_bandwidth("mlp_gelu") == doctest::Approx(1e9 / (0.5 / 4 + 0.5 / 2)));
}

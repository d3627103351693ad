// File: test_specs_profile_flash_attention.cpp
// The optional flash_attention_tflops of a device profile: exact loaded rates, the nearest head
// size, save/load, and bad values naming the file and the field.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_specs_util.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/input_equality.h"

using namespace whale::plan;
using whale::plan::testing::kCoreProfile;
using whale::plan::testing::scratch_file;

TEST_CASE("flash attention rates load in FLOP/s, one per head size, the nearest taken") {
  const DeviceProfile p = load_device_profile(scratch_file(
      "flash/core.yaml", kCoreProfile +
                             "flash_attention_tflops:\n  - {head_size: 64, forward: 240, backward: 110}\n"
                             "  - {head_size: 128, forward: 300, backward: 160}\n"));
  REQUIRE(p.flash_attention.rates.size() == 2);
  CHECK(p.flash_attention.rates[0].forward_flops_per_s == 240e12);
  CHECK(p.flash_attention.rates[1].backward_flops_per_s == 160e12);
  CHECK(p.flash_attention.nearest(128).head_size == 128);
  CHECK(p.flash_attention.nearest(80).head_size == 64);
  CHECK(p.flash_attention.nearest(96).head_size == 64);  // a tie: the smaller
  CHECK(p.flash_attention.nearest(112).head_size == 128);
  CHECK(p.flash_attention.nearest(256).head_size == 128);
  CHECK(p.flash_attention.nearest(16).head_size == 64);
  CHECK(load_device_profile(scratch_file("flash-none/core.yaml", kCoreProfile)).flash_attention.empty());
}

TEST_CASE("flash attention rates survive save and load") {
  DeviceProfile p = load_device_profile(scratch_file("flash-save/core.yaml", kCoreProfile));
  p.flash_attention.rates = {{64, 2.5e14, 1.25e14}, {128, 3e14, 1.5e14}};
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/flash-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  CHECK(load_device_profile(folder + "/core.yaml").flash_attention == p.flash_attention);
}

TEST_CASE("a bad flash attention rate names the file and the field") {
  const std::string zero = scratch_file(
      "flash-zero/core.yaml", kCoreProfile + "flash_attention_tflops: [{head_size: 64, forward: 0, backward: 1}]\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(zero); }, zero, "flash_attention_tflops[0].forward",
                   "positive");
  const std::string order = scratch_file(
      "flash-order/core.yaml",
      kCoreProfile + "flash_attention_tflops: [{head_size: 128, forward: 1, backward: 1}, "
                     "{head_size: 64, forward: 1, backward: 1}]\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(order); }, order, "flash_attention_tflops[1].head_size",
                   "increasing order");
  const std::string empty = scratch_file("flash-empty/core.yaml", kCoreProfile + "flash_attention_tflops: []\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(empty); }, empty, "flash_attention_tflops", "non-empty");
  const std::string unknown = scratch_file(
      "flash-key/core.yaml", kCoreProfile + "flash_attention_tflops: [{head_size: 64, forward: 1, backwards: 1}]\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(unknown); }, unknown, "flash_attention_tflops[0].backwards",
                   "unknown key");
}

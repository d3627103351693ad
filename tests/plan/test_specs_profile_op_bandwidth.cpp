// File: test_specs_profile_op_bandwidth.cpp
// The optional op_bandwidth_gbytes_per_s of a device profile (compute-bound op classes of a CPU
// core): exact loaded figures, the class lookup by op name, save/load, and bad values.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_specs_util.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/input_equality.h"

using namespace whale::plan;
using whale::plan::testing::kCoreProfile;
using whale::plan::testing::scratch_file;

TEST_CASE("op bandwidths load in bytes per second and match op names by class") {
  const DeviceProfile p = load_device_profile(scratch_file(
      "op-bandwidth/core.yaml", kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: 0.5, adamw: 2}\n"));
  REQUIRE(p.op_bandwidth_bytes_per_s.size() == 2);
  CHECK(p.op_bandwidth_bytes_per_s.at("gelu") == 0.5e9);
  CHECK(p.op_bandwidth("mlp_gelu") == 0.5e9);
  CHECK(p.op_bandwidth("adamw") == 2e9);
  CHECK(p.op_bandwidth("layernorm1") == 0);  // not measured: memory-bound
  const DeviceProfile plain = load_device_profile(scratch_file("op-bandwidth-none/core.yaml", kCoreProfile));
  CHECK(plain.op_bandwidth_bytes_per_s.empty());
  CHECK(plain.op_bandwidth("mlp_gelu") == 0);
}

TEST_CASE("op bandwidths survive save and load") {
  DeviceProfile p = load_device_profile(scratch_file("op-bandwidth-save/core.yaml", kCoreProfile));
  p.op_bandwidth_bytes_per_s = {{"softmax", 1.25e9}, {"gelu", 0.75e9}};
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/op-bandwidth-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  const DeviceProfile back = load_device_profile(folder + "/core.yaml");
  CHECK(back.op_bandwidth_bytes_per_s == p.op_bandwidth_bytes_per_s);
}

TEST_CASE("a bad op bandwidth names the file and the field") {
  const std::string negative = scratch_file(
      "op-bandwidth-bad/core.yaml", kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: -1}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(negative); }, negative,
                   "op_bandwidth_gbytes_per_s.gelu", "positive");
  const std::string listed = scratch_file(
      "op-bandwidth-list/core.yaml", kCoreProfile + "op_bandwidth_gbytes_per_s: [1, 2]\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(listed); }, listed, "op_bandwidth_gbytes_per_s",
                   "mapping");
}

TEST_CASE("a class's backward figure prices its backward; without one the forward's serves both") {
  const DeviceProfile p = load_device_profile(scratch_file(
      "op-backward/core.yaml", kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: 0.5, layernorm: 4}\n"
                                              "op_backward_bandwidth_gbytes_per_s: {layernorm: 0.25}\n"));
  CHECK(p.op_bandwidth("layernorm2") == 4e9);
  CHECK(p.op_backward_bandwidth("layernorm2") == 0.25e9);
  CHECK(p.op_backward_bandwidth("mlp_gelu") == 0.5e9);  // no backward figure: the forward's
  CHECK(p.op_backward_bandwidth("residual1") == 0);     // not measured: memory-bound
  // Save and load keep the two apart.
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch/op-backward-saved";
  std::filesystem::create_directories(folder);
  save_device_profile(p, folder + "/core.yaml");
  const DeviceProfile back = load_device_profile(folder + "/core.yaml");
  CHECK(back.op_bandwidth_bytes_per_s == p.op_bandwidth_bytes_per_s);
  CHECK(back.op_backward_bandwidth_bytes_per_s == p.op_backward_bandwidth_bytes_per_s);
  CHECK(back == p);
}

TEST_CASE("a backward figure of a class without a forward one names the field and the fix") {
  const std::string orphan = scratch_file(
      "op-backward-orphan/core.yaml", kCoreProfile + "op_bandwidth_gbytes_per_s: {gelu: 0.5}\n"
                                                     "op_backward_bandwidth_gbytes_per_s: {softmax: 1}\n");
  CHECK_SPEC_ERROR([&] { load_device_profile(orphan); }, orphan, "op_backward_bandwidth_gbytes_per_s.softmax",
                   "an op class of op_bandwidth_gbytes_per_s, got 'softmax'");
}

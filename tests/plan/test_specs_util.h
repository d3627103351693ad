// File: test_specs_util.h
// Helpers of the spec tests: scratch YAML files under the build folder, and a check that a
// call throws whale::Error whose file, YAML path and message say what is wrong.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "whale/plan/error.h"

namespace whale::plan::testing {

/// Writes `text` to <build>/specs-scratch/<name> (creating folders) and returns the path.
inline std::string scratch_file(const std::string& name, const std::string& text) {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/specs-scratch";
  const std::string path = folder + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
  return path;
}

/// A minimal valid CPU profile named "core" (write it as core.yaml), for the tests of optional
/// profile fields, which append their field to it.
inline const std::string kCoreProfile =
    "name: core\nkind: cpu\nsource: test\nmemory_gib: 2\nmemory_bandwidth_gbytes_per_s: 10\n"
    "peak_tflops: {fp32: 0.1}\nkernel_launch_us: 0\n"
    "gemm_efficiency: {fp32: [{gflop: 1, efficiency: 0.5}]}\n"
    "memory_efficiency: [{mib: 1, efficiency: 1}]\n";

/// The whole content of the text file `path` ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// An absolute path into the source tree.
inline std::string source_path(const std::string& relative) {
  return std::string(WHALE_SOURCE_DIR) + "/" + relative;
}

/// Runs `call`, expects a whale::Error, and returns it for the caller to inspect.
template <typename Call>
whale::Error expect_error(Call call) {
  try {
    call();
  } catch (const whale::Error& e) {
    return e;
  }
  FAIL("expected a whale::Error");
  return whale::Error("", "", "");
}

}  // namespace whale::plan::testing

/// Checks that `call` throws a whale::Error with this file and YAML path whose message holds `words`.
#define CHECK_SPEC_ERROR(call, file_, path_, words)                   \
  do {                                                                \
    const whale::Error e_ = whale::plan::testing::expect_error(call); \
    CAPTURE(e_.what());                                               \
    CHECK(e_.file() == (file_));                                      \
    CHECK(e_.yaml_path() == (path_));                                 \
    CHECK(std::string(e_.what()).find(words) != std::string::npos);   \
  } while (0)

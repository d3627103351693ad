// File: test_device_name.cpp
// Reported GPU names (nvidia-smi's, CUDA's) against device profile names: the key, the alias of
// profiles named beyond what the GPU reports, and every shipped GPU profile its GPU matches.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "whale/plan/device_name.h"

using namespace whale::plan;

TEST_CASE("device_name_key: lower-case letters and digits without vendor and brand words") {
  CHECK(device_name_key("NVIDIA A100-SXM4-40GB") == "a100sxm440gb");
  CHECK(device_name_key("a100-sxm4-40gb") == "a100sxm440gb");
  CHECK(device_name_key("Tesla V100-SXM2-16GB") == "v100sxm216gb");
  CHECK(device_name_key("NVIDIA GeForce RTX 2080 Ti") == "rtx2080ti");
  CHECK(device_name_key("Quadro RTX 6000") == "rtx6000");
  CHECK(device_name_key("nvidia-h100-80gb-hbm3") == "h10080gbhbm3");
  // Only whole words are dropped: "nvidiax" is not a vendor word.
  CHECK(device_name_key("NVIDIAX T4") == "nvidiaxt4");
  CHECK(device_name_key("") == "");
}

TEST_CASE("every shipped GPU profile matches its GPU's reported name, and no other's") {
  // (nvidia-smi --query-gpu=name, shipped profile name)
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"}, {"NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"},
      {"Tesla V100-SXM2-16GB", "v100-sxm2-16gb"},  {"Tesla V100-SXM2-32GB", "v100-sxm2-32gb"},
      {"Tesla P100-SXM2-16GB", "p100-sxm2-16gb"},  {"NVIDIA H100 80GB HBM3", "h100-sxm-80gb"},
      {"NVIDIA A10", "a10"},                       {"Tesla T4", "t4"},
      {"NVIDIA L4", "l4"},                         {"NVIDIA L40S", "l40s"},
      {"NVIDIA GeForce RTX 3090", "rtx3090"},      {"NVIDIA GeForce RTX 4090", "rtx4090"},
      {"NVIDIA GeForce RTX 2080 Ti", "rtx2080ti"}, {"NVIDIA TITAN RTX", "titan-rtx"},
      {"NVIDIA B200", "b200"}};
  for (const auto& gpu : pairs) {
    for (const auto& other : pairs) {
      CAPTURE(gpu.first);
      CAPTURE(other.second);
      CHECK(device_name_matches(gpu.first, other.second) == (gpu.second == other.second));
    }
  }
}

TEST_CASE("a profile measured by whale-profile matches the GPU it was measured on") {
  CHECK(device_name_matches("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"));
  CHECK(shipped_profile_alias("NVIDIA H100 80GB HBM3") == "h100-sxm-80gb");
  CHECK(shipped_profile_alias("NVIDIA H100 PCIe") == "");
  CHECK_FALSE(device_name_matches("NVIDIA H100 PCIe", "h100-sxm-80gb"));
  CHECK_FALSE(device_name_matches("NVIDIA A100-SXM4-40GB", ""));
  CHECK_FALSE(device_name_matches("NVIDIA A100 80GB PCIe", "a100-sxm4-80gb"));
}

// File: test_specs_shipped.cpp
// Every shipped profile, cluster, model and plan loads, and a few of their figures are right.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/error.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
namespace fs = std::filesystem;

namespace {

// Sorted *.yaml files directly in `folder` (sub-folders belong to their own tests).
std::vector<std::string> yaml_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Loads every file of `folder` with `load`, reporting the failing file.
template <typename Load>
int load_all(const std::string& folder, Load load) {
  int count = 0;
  for (const std::string& file : yaml_files(folder)) {
    CAPTURE(file);
    try {
      load(file);
    } catch (const whale::Error& e) {
      FAIL(e.what());
    }
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("every shipped profile loads and is named after its file") {
  const int count = load_all("profiles", [](const std::string& file) {
    const DeviceProfile profile = load_device_profile(file);
    CHECK(profile.peak(Precision::fp32) > 0);
    CHECK(profile.memory_bytes > 0);
  });
  CHECK(count >= 20);
  for (const char* name : {"v100-sxm2-16gb", "v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb",
                           "h100-sxm-80gb", "t4", "p100-sxm2-16gb", "a10", "l4", "rtx3090", "cpu",
                           "h200-sxm-141gb", "gh200-96gb", "b200", "l40s", "rtx4090", "rtx2080ti",
                           "titan-rtx", "mi250x", "mi300x"}) {
    CAPTURE(name);
    CHECK(fs::exists(std::string("profiles/") + name + ".yaml"));
  }
}

TEST_CASE("the newer profiles carry their datasheet figures") {
  // Tensor peaks (dense) and memory, as the files cite them: bf16, or fp16 on Turing, which has
  // no bf16 (its bf16 GEMMs run as fp32, docs/profile.md#fallbacks).
  struct Expect { const char* name; Precision precision; double tflops; double memory_gib; };
  const Precision bf16 = Precision::bf16, fp16 = Precision::fp16;
  for (const Expect& e : {Expect{"h200-sxm-141gb", bf16, 989.4, 141}, Expect{"gh200-96gb", bf16, 990, 96},
                          Expect{"b200", bf16, 2250, 180}, Expect{"l40s", bf16, 362.05, 48},
                          Expect{"rtx4090", bf16, 165.2, 24}, Expect{"rtx2080ti", fp16, 53.8, 11},
                          Expect{"titan-rtx", fp16, 130, 24}, Expect{"mi250x", bf16, 383, 128},
                          Expect{"mi300x", bf16, 1307.4, 192}}) {
    CAPTURE(e.name);
    const DeviceProfile p = load_device_profile(std::string("profiles/") + e.name + ".yaml");
    CHECK(p.peak(e.precision) == doctest::Approx(e.tflops * 1e12));
    CHECK(p.memory_bytes == doctest::Approx(e.memory_gib * 1073741824.0));
  }
}

TEST_CASE("every shipped cluster loads") {
  CHECK(load_all("configs/clusters", [](const std::string& file) { load_cluster(file); }) >= 7);
  const Cluster a100 = load_cluster("configs/clusters/a100-64.yaml");
  CHECK(a100.devices.size() == 64);
  CHECK(a100.nodes.size() == 8);
  CHECK(a100.nodes[7].name == "dgx-a100-7");
  CHECK(a100.link_between(0, 7).kind == "nvlink");
  CHECK(a100.link_between(7, 8).kind == "infiniband");
  CHECK(a100.profile_of(63).peak(Precision::bf16) == 312e12);
  const Cluster mixed = load_cluster("configs/clusters/mixed-1024.yaml");
  CHECK(mixed.devices.size() >= 1024);
  CHECK(mixed.device_models() == std::vector<std::string>{"h100-sxm-80gb", "a100-sxm4-80gb", "v100-sxm2-32gb"});
  const Cluster node = load_cluster("configs/clusters/mixed-node.yaml");
  CHECK(node.nodes.size() == 1);
  CHECK(node.device_models().size() == 2);
  CHECK(load_cluster("configs/clusters/cpu-local.yaml").devices.size() == 2);
  CHECK(load_cluster("configs/clusters/cpu-local-4.yaml").devices.size() == 4);
}

TEST_CASE("every shipped model loads with its published parameter count") {
  CHECK(load_all("configs/models", [](const std::string& file) { load_model(file); }) >= 12);
  // Parameter counts within 5% of the published sizes (untied heads add V*h to gpt2).
  struct Expect { const char* name; double billions; double tolerance; };
  for (const Expect& e : {Expect{"gpt3-1.3b", 1.3, 0.10}, Expect{"gpt3-6.7b", 6.7, 0.05},
                          Expect{"gpt3-13b", 13.0, 0.05}, Expect{"gpt3-175b", 175.0, 0.05},
                          Expect{"llama2-7b", 6.74, 0.02}, Expect{"llama2-13b", 13.0, 0.03},
                          Expect{"llama2-70b", 69.0, 0.03}}) {
    CAPTURE(e.name);
    const Model model = load_model(std::string("configs/models/") + e.name + ".yaml");
    CHECK(std::abs(model.parameter_count() / 1e9 - e.billions) / e.billions < e.tolerance);
  }
}

TEST_CASE("every shipped plan loads") {
  CHECK(load_all("configs/plans", [](const std::string& file) { load_plan(file); }) >= 5);
  if (fs::exists("configs/plans/tiny")) load_all("configs/plans/tiny", [](const std::string& file) { load_plan(file); });
  CHECK(load_all("configs/plans/tiny-llama", [](const std::string& file) { load_plan(file); }) >= 6);
  const Plan plan = load_plan("configs/plans/a100-v100-gpt3-1.3b.yaml");
  CHECK(plan.stages.size() == 4);
  CHECK(plan.cluster.device_models().size() == 2);
  CHECK(plan.global_batch() == plan.model.training.global_batch);
}

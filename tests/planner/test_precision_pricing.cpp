// File: test_precision_pricing.cpp
// priced_alike and standing_precision: which device models price bf16 and fp16 alike, and that
// where they say so, a search in either precision gives the same plan at the same figures.
#include <doctest/doctest.h>

#include <filesystem>

#include "planner_fixtures.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/precision_pricing.h"

using namespace whale;

namespace {

plan::DeviceProfile shipped_profile(const std::string& name) {
  return plan::load_device_profile(std::string(WHALE_SOURCE_DIR) + "/profiles/" + name + ".yaml");
}

// One node of four devices of `device_model`.
plan::Cluster four_of(const std::string& device_model) {
  const std::string yaml = "name: four-" + device_model + "\nnodes:\n  - name: n\n    devices: [{model: " +
                           device_model +
                           ", count: 4}]\n    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}\n"
                           "    network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}\n";
  return plan::load_cluster(test::temp_file("pricing_four_" + device_model + ".yaml", yaml));
}

}  // namespace

TEST_CASE("bf16 and fp16 are priced alike where a device runs both at one peak and curve") {
  const plan::Training training = test::shipped_model("gpt2-124m").training;
  using plan::Precision;
  // Datasheet profiles: the same peak and curve for both on Ampere and Hopper; Volta has no
  // bf16 units (bf16 priced at fp32's 15.7 TFLOP/s against fp16's 125).
  CHECK(plan::priced_alike(shipped_profile("h100-sxm-80gb"), training, Precision::bf16, Precision::fp16));
  CHECK(plan::priced_alike(shipped_profile("a100-sxm4-80gb"), training, Precision::fp16, Precision::bf16));
  CHECK_FALSE(plan::priced_alike(shipped_profile("v100-sxm2-32gb"), training, Precision::bf16, Precision::fp16));
  // Four bytes an element against two.
  CHECK_FALSE(plan::priced_alike(shipped_profile("h100-sxm-80gb"), training, Precision::fp32, Precision::bf16));
  CHECK(plan::priced_alike(shipped_profile("v100-sxm2-32gb"), training, Precision::bf16, Precision::bf16));

  plan::DeviceProfile h100 = shipped_profile("h100-sxm-80gb");
  SUBCASE("another peak") { h100.peak_flops_per_s[Precision::fp16] *= 1.01; }
  SUBCASE("another cold curve") {
    std::vector<plan::EfficiencyPoint> points = h100.gemm_efficiency[Precision::bf16].points();
    points.back().efficiency *= 0.99;
    h100.gemm_efficiency[Precision::bf16] = plan::EfficiencyCurve(points);
  }
  SUBCASE("a warm curve for one of them only") {
    h100.cache.warm_gemm_efficiency[Precision::fp16] = h100.gemm_efficiency[Precision::fp16];
  }
  CHECK_FALSE(plan::priced_alike(h100, training, Precision::bf16, Precision::fp16));
}

TEST_CASE("the standing precision of a set of device models is the first every one prices alike") {
  const plan::Cluster mixed = test::shipped_cluster("mixed-1024");
  plan::Training training = test::shipped_model("gpt3-175b").training;
  training.precision = plan::Precision::bf16;
  using plan::Precision;
  CHECK(plan::standing_precision(mixed, {"h100-sxm-80gb"}, training) == Precision::fp16);
  CHECK(plan::standing_precision(mixed, {"h100-sxm-80gb", "a100-sxm4-80gb"}, training) == Precision::fp16);
  CHECK(plan::standing_precision(mixed, {"h100-sxm-80gb", "v100-sxm2-32gb"}, training) == Precision::bf16);
  training.precision = Precision::fp16;
  CHECK(plan::standing_precision(mixed, {"v100-sxm2-32gb"}, training) == Precision::fp16);
  CHECK(plan::standing_precision(mixed, {"a100-sxm4-80gb"}, training) == Precision::fp16);
  training.precision = Precision::fp32;
  CHECK(plan::standing_precision(mixed, {"a100-sxm4-80gb"}, training) == Precision::fp32);
}

TEST_CASE("every shipped GPU profile that prices bf16 and fp16 alike plans them alike") {
  const sim::Simulator simulator;
  const plan::Model bf16 = test::shipped_model("gpt2-124m");
  plan::Model fp16 = bf16;
  fp16.training.precision = plan::Precision::fp16;
  plan::PlannerOptions options;
  options.global_batch = 16;
  options.compare = false;
  int alike = 0;
  for (const auto& file : std::filesystem::directory_iterator(std::string(WHALE_SOURCE_DIR) + "/profiles")) {
    const std::string name = file.path().stem().string();
    const plan::DeviceProfile profile = shipped_profile(name);
    if (profile.kind != "gpu" || !plan::priced_alike(profile, bf16.training, plan::Precision::bf16, plan::Precision::fp16))
      continue;
    CAPTURE(name);
    ++alike;
    const plan::Cluster cluster = four_of(name);
    const plan::PlanResult a = plan::search_plans(cluster, bf16, simulator, options);
    const plan::PlanResult b = plan::search_plans(cluster, fp16, simulator, options);
    REQUIRE(a.ranked.size() == b.ranked.size());
    for (std::size_t i = 0; i < a.ranked.size(); ++i) {
      CHECK(a.ranked[i].label == b.ranked[i].label);
      CHECK(a.ranked[i].estimate.step_time_s == b.ranked[i].estimate.step_time_s);
      CHECK(a.ranked[i].estimate.mfu == b.ranked[i].estimate.mfu);
      REQUIRE(a.ranked[i].estimate.devices.size() == b.ranked[i].estimate.devices.size());
      for (std::size_t d = 0; d < a.ranked[i].estimate.devices.size(); ++d)
        CHECK(a.ranked[i].estimate.devices[d].peak_memory_bytes == b.ranked[i].estimate.devices[d].peak_memory_bytes);
    }
  }
  CHECK(alike >= 2);   // at least the A100s and H100s
}

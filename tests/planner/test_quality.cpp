// File: test_quality.cpp
// Quality bars on every shipped heterogeneous cluster with gpt3-1.3b: the best plan reaches at
// least 90% of HetHub's upper bound, and where the device models differ in speed by 1.5x or
// more it is at least 1.2x faster than the heterogeneity-unaware baseline.
#include <doctest/doctest.h>

#include <algorithm>

#include "planner_fixtures.h"

using namespace whale;

namespace {

// Ratio of the fastest to the slowest device model's speed, measured as each model's best
// simulated samples/s per device when it trains alone (the upper bound's parts).
double speed_ratio(const plan::Cluster& cluster, const plan::UpperBound& ub) {
  double lo = 1e300, hi = 0;
  for (const auto& entry : ub.per_model) {
    const std::string& model = entry.first;  // a reference, so that the lambda may capture it
    const double samples_per_s = entry.second;
    const auto count = std::count_if(cluster.devices.begin(), cluster.devices.end(),
                                     [&](const plan::Device& d) { return d.model == model; });
    lo = std::min(lo, samples_per_s / count);
    hi = std::max(hi, samples_per_s / count);
  }
  return hi / lo;
}

void check_bars(const std::string& cluster_name, int global_batch, double upper_bound_bar) {
  const plan::Cluster cluster = test::shipped_cluster(cluster_name);
  const plan::Model model = test::shipped_model("gpt3-1.3b");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = global_batch;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  CAPTURE(cluster_name);
  CAPTURE(r.speedup_vs_baseline);
  CAPTURE(r.fraction_of_upper_bound);
  REQUIRE(r.has_comparison);
  REQUIRE(r.baseline_found);
  CHECK(r.upper_bound.per_model.size() == cluster.device_models().size());
  CHECK(r.fraction_of_upper_bound >= upper_bound_bar);
  CAPTURE(speed_ratio(cluster, r.upper_bound));
  if (speed_ratio(cluster, r.upper_bound) >= 1.5) CHECK(r.speedup_vs_baseline >= 1.2);
  CHECK_NOTHROW(plan::validate_plan(r.best().plan));
}

}  // namespace

TEST_CASE("quality bars on the shipped heterogeneous clusters (gpt3-1.3b)") {
  check_bars("a100-v100", 0, 0.9);   // per-device speeds differ about 2.6x
  check_bars("v100-t4", 0, 0.9);     // about 2.6x
  check_bars("mixed-node", 0, 0.9);  // about 1.3x: only the upper-bound bar applies
}

// Per-sample times H100 : A100 : V100 are about 1 : 2.7 : 5.8. Memory-ordered pipelines
// (H100 first) reach 88.5%; the best plan (92.4%) is interleaved 1F1B over A100 | A100 | V100 |
// H100 (the H100s hold the head), each group's layers balanced over its two chunks.
TEST_CASE("quality bars on mixed-1024 (gpt3-1.3b, batch 16384)") {
  check_bars("mixed-1024", 16384, 0.9);
}

TEST_CASE("a best plan above the sum of the device models alone says the sum bounds nothing there") {
  // Two L4s and an A10 on PCIe: gpt3-1.3b on either model alone is held back by its memory
  // (24 GB), so the three together train faster than the two sums.
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("quality_l4_a10.yaml", R"(name: l4-a10-3
network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}
nodes:
  - name: n0
    devices: [{model: l4, count: 2}, {model: a10, count: 1}]
    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}
)"));
  const sim::Simulator simulator;
  const plan::PlanResult r = plan::search_plans(cluster, test::shipped_model("gpt3-1.3b"), simulator, plan::PlannerOptions{});
  REQUIRE(r.has_comparison);
  CHECK(r.fraction_of_upper_bound > 1);
  CHECK(plan::format_planner_text(r).find("% of it (") != std::string::npos);
  CHECK(plan::format_planner_text(r).find("above it, so no bound here") != std::string::npos);
}

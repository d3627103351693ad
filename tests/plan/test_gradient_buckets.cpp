// File: test_gradient_buckets.cpp
// gradient_buckets: layers in reverse order, a bucket closes once it reaches the cap, the last
// one may be smaller, tp shards count their split part only; the plan field's YAML and checks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/gradient_buckets.h"

using whale::plan::GradientBucket;
using whale::plan::gradient_buckets;
using whale::plan::Plan;

namespace {

constexpr double kMib = 1024.0 * 1024.0;

/// One stage over layers of the given parameter counts, fp32 (4 bytes a gradient).
Plan stage_of(const std::vector<double>& parameters, double bucket_mib, int tp = 1) {
  Plan plan;
  plan.precision = whale::plan::Precision::fp32;
  plan.gradient_bucket_mib = bucket_mib;
  for (double p : parameters) {
    whale::plan::Layer layer;
    layer.parameters = p;
    plan.model.layers.push_back(layer);
  }
  whale::plan::Stage stage;
  stage.first_layer = 0;
  stage.end_layer = static_cast<int>(parameters.size());
  stage.tp = tp;
  stage.devices = {0, 1};
  stage.devices.resize(2 * tp);
  plan.stages.push_back(stage);
  return plan;
}

bool same(const std::vector<GradientBucket>& a, const std::vector<GradientBucket>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first_layer != b[i].first_layer || a[i].end_layer != b[i].end_layer ||
        a[i].bytes != b[i].bytes || a[i].expert_bytes != b[i].expert_bytes)
      return false;
  return true;
}

}  // namespace

TEST_CASE("buckets run from the last layer and close once they reach the cap") {
  // Gradient bytes per layer: 400000, 800000, 1200000, 200000; cap 1 MiB = 1048576 bytes.
  // From layer 3 down: 200000 (open), + 1200000 = 1400000 >= cap -> [2, 4); then 800000 (open),
  // + 400000 = 1200000 >= cap -> [0, 2).
  const Plan plan = stage_of({1e5, 2e5, 3e5, 5e4}, 1.0);
  CHECK(same(gradient_buckets(plan, 0), {{2, 4, 1.4e6, 0}, {0, 2, 1.2e6, 0}}));
}

TEST_CASE("a layer is never split and the last bucket may be smaller than the cap") {
  // Cap 0.5 MiB = 524288 bytes: [2, 4) 1400000 as before; layer 1 alone 800000 >= cap; layer 0
  // 400000 ends the stage.
  const Plan plan = stage_of({1e5, 2e5, 3e5, 5e4}, 0.5);
  CHECK(same(gradient_buckets(plan, 0), {{2, 4, 1.4e6, 0}, {1, 2, 8e5, 0}, {0, 1, 4e5, 0}}));
  // A cap above the stage's gradients: one bucket of everything.
  CHECK(same(gradient_buckets(stage_of({1e5, 2e5}, 25.0), 0), {{0, 2, 1.2e6, 0}}));
  // The default cap is DDP's 25 MiB.
  CHECK(Plan().gradient_bucket_mib == 25.0);
}

TEST_CASE("a tp shard holds the split parameters divided by tp plus the replicated ones") {
  Plan plan = stage_of({1000, 1000}, 1.0 / kMib * 2400, 2);  // cap 2400 bytes
  plan.model.layers[1].parameters_replicated = 200;
  // Layer 1: 800 / 2 + 200 = 600 params, 2400 bytes = the cap; layer 0: 500 params, 2000 bytes.
  CHECK(whale::plan::parameters_per_device(plan.model.layers[1], 2) == 600);
  CHECK(same(gradient_buckets(plan, 0), {{1, 2, 2400, 0}, {0, 1, 2000, 0}}));
}

TEST_CASE("the buckets of a later stage cover only its layers") {
  Plan plan = stage_of({1e5, 2e5, 3e5, 5e4}, 1.0);
  plan.stages[0].end_layer = 2;
  whale::plan::Stage second = plan.stages[0];
  second.first_layer = 2;
  second.end_layer = 4;
  plan.stages.push_back(second);
  CHECK(same(gradient_buckets(plan, 1), {{2, 4, 1.4e6, 0}}));
  CHECK(same(gradient_buckets(plan, 0), {{0, 2, 1.2e6, 0}}));
}

// File: test_stage_text.cpp
// The few words a stage's devices, tp degrees and shares print as: equal shares "N each", runs
// of equal values as value(replicas), a stage's device models joined by "+".
#include <doctest/doctest.h>

#include "whale/plan/stage_text.h"

using namespace whale::plan;

TEST_CASE("shares print as one value each, a plain list, or runs of equal shares") {
  CHECK(shares_text({1, 1, 1, 1}) == "1 each");
  CHECK(shares_text(std::vector<int>(256, 2)) == "2 each");
  CHECK(shares_text({3, 2, 1}) == "3,2,1");
  CHECK(shares_text({5}) == "5");
  CHECK(shares_text({3, 3, 3, 2, 2, 1}) == "3(3),2(2),1");
  std::vector<int> long_runs(128, 3);
  long_runs.insert(long_runs.end(), 127, 2);
  long_runs.push_back(1);
  CHECK(shares_text(long_runs) == "3(128),2(127),1");
}

TEST_CASE("a stage's tp is its degree, or with mixed tp each run as degree(replicas)") {
  Stage uniform;
  uniform.tp = 4;
  uniform.devices = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(stage_tp_text(uniform) == "4");
  Stage mixed;
  mixed.replica_tps = {1, 1, 1, 4, 4, 1};
  CHECK(stage_tp_text(mixed) == "1(3),4(2),1(1)");
}

TEST_CASE("a stage's device models in order of first appearance, joined by +") {
  Plan plan;
  for (const char* model : {"v100-sxm2-32gb", "a100-sxm4-80gb", "v100-sxm2-32gb", "a100-sxm4-80gb"}) {
    Device d;
    d.model = model;
    plan.cluster.devices.push_back(d);
  }
  Stage stage;
  stage.devices = {1, 3};
  CHECK(stage_device_models(plan, stage) == "a100-sxm4-80gb");
  stage.devices = {2, 1, 0, 3};
  CHECK(stage_device_models(plan, stage) == "v100-sxm2-32gb+a100-sxm4-80gb");
}

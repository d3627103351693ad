// File: test_stage_index.cpp
// Stage::holds and Stage::index_of: a device's replica-major position among a stage's devices,
// and the error for a device the stage does not hold.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/plan.h"

using namespace whale::plan;

TEST_CASE("index_of gives a device's position in the stage's devices, in their (unsorted) order") {
  Stage stage;
  stage.devices = {8, 9, 2, 3};  // two replicas of tp 2: {8, 9} then {2, 3}
  stage.tp = 2;
  CHECK(stage.index_of(8) == 0);
  CHECK(stage.index_of(9) == 1);
  CHECK(stage.index_of(2) == 2);
  CHECK(stage.index_of(3) == 3);
  CHECK(stage.holds(2));
  CHECK_FALSE(stage.holds(4));
}

TEST_CASE("index_of a device the stage does not hold is one clear error naming both") {
  Stage stage;
  stage.devices = {4, 5, 6, 7};
  CHECK_SPEC_ERROR([&] { stage.index_of(1); }, "", "devices",
                   "one of the stage's devices 4-7, got device 1");
  CHECK_SPEC_ERROR([&] { Stage{}.index_of(0); }, "", "devices", "got device 0");
}

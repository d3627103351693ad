// File: test_loss_scaler.cpp
// LossScaler: the exact sequence of scales and skips for a hand-written pattern of overflows.
#include <doctest/doctest.h>

#include <vector>

#include "whale/exec/runtime/loss_scaler.h"

using namespace whale::exec;

TEST_CASE("loss scaler: halves and skips on overflow, doubles after the growth interval") {
  LossScalerConfig config;
  config.growth_interval = 3;  // the default 1000, shortened so the sequence is hand-checkable
  LossScaler scaler(true, config);
  CHECK(scaler.scale() == 65536.0);
  // good, good, good (grow), bad (halve), good, bad (halve), good x3 (grow)
  const std::vector<bool> finite = {true, true, true, false, true, false, true, true, true};
  const std::vector<bool> stepped = {true, true, true, false, true, false, true, true, true};
  const std::vector<double> scale_after = {65536, 65536, 131072, 65536, 65536,
                                           32768, 32768, 32768, 65536};
  for (std::size_t i = 0; i < finite.size(); ++i) {
    INFO("step " << i);
    CHECK(scaler.update(finite[i]) == stepped[i]);
    CHECK(scaler.scale() == scale_after[i]);
  }
  CHECK(scaler.skipped_steps() == 2);
  CHECK(scaler.good_steps() == 0);
}

TEST_CASE("loss scaler: the defaults and the floor") {
  LossScaler defaults(true);
  for (int i = 0; i < 999; ++i) REQUIRE(defaults.update(true));
  CHECK(defaults.scale() == 65536.0);
  CHECK(defaults.update(true));
  CHECK(defaults.scale() == 131072.0);  // after 1000 good steps in a row
  LossScalerConfig config;
  config.initial_scale = 2.0;
  LossScaler floor(true, config);
  CHECK(!floor.update(false));
  CHECK(!floor.update(false));
  CHECK(floor.scale() == 1.0);  // min_scale
  LossScaler disabled(false);
  CHECK(disabled.scale() == 1.0);
  CHECK(disabled.update(false));  // never skips
  CHECK(disabled.skipped_steps() == 0);
}

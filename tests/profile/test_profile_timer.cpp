// File: test_profile_timer.cpp
// median_call_time_s's hooks: in_step before the warm-up and right before every timed sample
// (whale-profile --lockstep puts its barrier there), and before_sample once per sample, ahead
// of in_step.
#include <doctest/doctest.h>

#include <string>

#include "whale/exec/profile/profile_timer.h"

using namespace whale::exec;

TEST_CASE("in_step runs before the warm-up and before every timed sample") {
  std::string calls;
  TimerOptions options;
  options.warmup_calls = 2;
  options.samples = 3;
  options.min_sample_s = 0;  // the first calibration call already lasts long enough: one call a sample
  options.in_step = [&] { calls += 'M'; };
  median_call_time_s([&] { calls += 'o'; }, options);
  CHECK(calls == "MoooMoMoMo");  // 2 warm-up calls, 1 calibration call, 3 samples
  median_call_time_s([&] { calls += 'o'; }, options);
  CHECK(calls == "MoooMoMoMoMoooMoMoMo");
}

TEST_CASE("with before_sample, each sample is one call after its hook and then in_step") {
  std::string calls;
  TimerOptions options;
  options.warmup_calls = 1;
  options.samples = 2;
  options.in_step = [&] { calls += 'M'; };
  options.before_sample = [&] { calls += 's'; };
  median_call_time_s([&] { calls += 'o'; }, options);
  CHECK(calls == "MosMosMo");
}

// File: test_profile_timer.cpp
// median_call_time_s's hooks: before_measurement once per measurement, ahead of every call of
// the op (whale-profile --lockstep puts its barrier there), and before_sample once per sample.
#include <doctest/doctest.h>

#include <string>

#include "whale/exec/profile/profile_timer.h"

using namespace whale::exec;

TEST_CASE("before_measurement runs once per measurement, before the warm-up") {
  std::string calls;
  TimerOptions options;
  options.warmup_calls = 2;
  options.samples = 3;
  options.min_sample_s = 0;  // the first calibration call already lasts long enough: one call a sample
  options.before_measurement = [&] { calls += 'M'; };
  median_call_time_s([&] { calls += 'o'; }, options);
  CHECK(calls == "Moooooo");  // 2 warm-up calls, 1 calibration call, 3 samples
  median_call_time_s([&] { calls += 'o'; }, options);
  CHECK(calls == "MooooooMoooooo");
}

TEST_CASE("with before_sample, each sample is one call after its hook, and before_measurement leads") {
  std::string calls;
  TimerOptions options;
  options.warmup_calls = 1;
  options.samples = 2;
  options.before_measurement = [&] { calls += 'M'; };
  options.before_sample = [&] { calls += 's'; };
  median_call_time_s([&] { calls += 'o'; }, options);
  CHECK(calls == "Mososo");
}

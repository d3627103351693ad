// File: test_profile_timer.cpp
// median_call_time_s's hooks: in_step before the warm-up and right before every timed sample
// (whale-profile --lockstep puts its barrier there), and before_sample once per sample, ahead
// of in_step.
#include <doctest/doctest.h>

#include <string>
#include <vector>

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

TEST_CASE("interleaved timings take sample s of every op before sample s + 1 of any") {
  std::string calls;
  const auto timer = [&](int samples) {
    TimerOptions options;
    options.warmup_calls = 1;
    options.samples = samples;
    options.in_step = [&] { calls += 'M'; };
    options.before_sample = [&] { calls += 's'; };
    return options;
  };
  const std::vector<TimedOp> ops = {{[&] { calls += 'a'; }, timer(2)},
                                    {[&] { calls += 'b'; }, timer(3)},
                                    {[&] { calls += 'c'; }, timer(1)}};
  const std::vector<whale::Seconds> medians = interleaved_median_call_times_s(ops);
  CHECK(medians.size() == 3);
  // Warm-ups (each after its in_step), then rounds: a and c stop after their own samples.
  CHECK(calls == "MaMbMc" "sMasMbsMc" "sMasMb" "sMb");
  for (whale::Seconds s : medians) CHECK(s >= 0);
}

TEST_CASE("interleaved timings need one call a sample") {
  TimerOptions batched;  // no before_sample: median_call_time_s would batch calls
  CHECK_THROWS_WITH(interleaved_median_call_times_s({{[] {}, batched}}),
                    doctest::Contains("before_sample"));
}

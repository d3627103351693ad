// File: profile_timer.cpp
// median_call_time_s: calibrated repetitions per sample, median over samples, each sample
// started in step with the other ranks' where in_step is set.
#include "whale/exec/profile/profile_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "whale/exec/profile/profile_statistics.h"

namespace whale::exec {
namespace {

Seconds time_calls_s(const std::function<void()>& op, long calls) {
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) op();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

}  // namespace

Seconds median_call_time_s(const std::function<void()>& op, const TimerOptions& options) {
  const auto step = [&] {
    if (options.in_step) options.in_step();
  };
  step();
  for (int i = 0; i < options.warmup_calls; ++i) op();
  if (options.before_sample) {
    std::vector<double> per_call_s;
    for (int s = 0; s < std::max(1, options.samples); ++s) {
      options.before_sample();
      step();
      per_call_s.push_back(time_calls_s(op, 1));
    }
    return median(std::move(per_call_s));
  }
  // Calibrate: double the calls until one batch lasts min_sample_s.
  long calls = 1;
  for (Seconds t = time_calls_s(op, calls); t < options.min_sample_s && calls < (1L << 30);
       t = time_calls_s(op, calls)) {
    const double grow = t > 0 ? options.min_sample_s / t : 2.0;
    calls = std::max(calls * 2, static_cast<long>(std::ceil(calls * std::min(grow, 1e6))));
  }
  std::vector<double> per_call_s;
  for (int s = 0; s < std::max(1, options.samples); ++s) {
    step();
    per_call_s.push_back(time_calls_s(op, calls) / calls);
  }
  return median(std::move(per_call_s));
}

}  // namespace whale::exec

// File: profile_timer.cpp
// median_call_time_s (calibrated repetitions per sample, median over samples) and
// interleaved_median_call_times_s (one call a sample, the ops' samples in turn; a cold timing
// is that of one op alone); every sample starts in step with the other ranks' where in_step is set.
#include "whale/exec/profile/profile_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "whale/exec/profile/profile_statistics.h"
#include "whale/plan/check.h"

namespace whale::exec {
namespace {

Seconds time_calls_s(const std::function<void()>& op, long calls) {
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) op();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

void call_if_set(const std::function<void()>& hook) {
  if (hook) hook();
}

}  // namespace

Seconds median_call_time_s(const std::function<void()>& op, const TimerOptions& options) {
  // One call a sample: the interleaved timing of this op alone.
  if (options.before_sample) return interleaved_median_call_times_s({{op, options}}).front();
  call_if_set(options.in_step);
  for (int i = 0; i < options.warmup_calls; ++i) op();
  // Calibrate: double the calls until one batch lasts min_sample_s.
  long calls = 1;
  for (Seconds t = time_calls_s(op, calls); t < options.min_sample_s && calls < (1L << 30);
       t = time_calls_s(op, calls)) {
    const double grow = t > 0 ? options.min_sample_s / t : 2.0;
    calls = std::max(calls * 2, static_cast<long>(std::ceil(calls * std::min(grow, 1e6))));
  }
  std::vector<double> per_call_s;
  for (int s = 0; s < std::max(1, options.samples); ++s) {
    call_if_set(options.in_step);
    per_call_s.push_back(time_calls_s(op, calls) / calls);
  }
  return median(std::move(per_call_s));
}

std::vector<Seconds> interleaved_median_call_times_s(const std::vector<TimedOp>& ops) {
  int samples = 1;
  for (const TimedOp& t : ops) {
    WHALE_CHECK(static_cast<bool>(t.timer.before_sample),
                "interleaved_median_call_times_s: every op's timer needs before_sample (one call a sample)");
    samples = std::max(samples, t.timer.samples);  // the rounds; each op takes its own samples
  }
  for (const TimedOp& t : ops) {
    call_if_set(t.timer.in_step);
    for (int i = 0; i < t.timer.warmup_calls; ++i) t.op();
  }
  std::vector<std::vector<double>> per_call_s(ops.size());
  for (int s = 0; s < samples; ++s) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (s >= std::max(1, ops[i].timer.samples)) continue;
      ops[i].timer.before_sample();
      call_if_set(ops[i].timer.in_step);
      per_call_s[i].push_back(time_calls_s(ops[i].op, 1));
    }
  }
  std::vector<Seconds> medians;
  for (std::vector<double>& times : per_call_s) medians.push_back(median(std::move(times)));
  return medians;
}

}  // namespace whale::exec

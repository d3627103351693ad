// File: profile_timer.h
// Wall-clock timing of host-side operations for whale-profile: each sample repeats the
// operation until it lasts long enough for the clock, and the median of the samples is kept.
#pragma once

#include <functional>

#include "whale/plan/units.h"

namespace whale::exec {

struct TimerOptions {
  int warmup_calls = 1;        // calls before any timing (page faults, caches, lazy init)
  int samples = 5;             // timed samples; the median is reported
  Seconds min_sample_s = 2e-3; // each sample repeats the call until it lasts at least this
  /// When set, called (untimed) before every sample, and a sample is ONE call: for timing an
  /// op from cold caches (CacheFlusher), whose flush a batch of calls would amortise away.
  std::function<void()> before_sample;
  /// When set, called (untimed) before the warm-up and right before every timed sample (after
  /// before_sample): whale-profile --lockstep makes it a barrier of the ranks profiling their
  /// cores at once, so that their timed calls start together, as data-parallel ranks run the
  /// same ops at once, and no core times its op under another core's cache flush.
  std::function<void()> in_step;
};

/// Median seconds of one call of `op` (steady_clock). Without before_sample, the number of
/// calls per sample is chosen once, from the time of the warm-up, and is the same for every
/// sample.
Seconds median_call_time_s(const std::function<void()>& op, const TimerOptions& options);

}  // namespace whale::exec

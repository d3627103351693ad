// File: profile_timer.h
// Wall-clock timing of host-side operations for whale-profile: each sample repeats the
// operation until it lasts long enough for the clock, and the median of the samples is kept.
#pragma once

#include <functional>
#include <vector>

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

/// One op for interleaved_median_call_times_s: the call and its timer, whose before_sample must
/// be set (one call a sample, as for cold timings).
struct TimedOp {
  std::function<void()> op;
  TimerOptions timer;
};

/// Median seconds of one call of each op, as median_call_time_s with before_sample, but with the
/// samples taken in turn: every op's warm-up first, then sample s of every op before sample s + 1
/// of any. A transient of the machine (another tenant, a frequency step) then falls on one or
/// two samples of many ops, which their medians drop, instead of on every sample of one op.
/// Each op takes its own timer's samples and warm-up calls, each sample after its own
/// before_sample and in_step. Throws whale::Error (internal) when an op's before_sample is unset.
std::vector<Seconds> interleaved_median_call_times_s(const std::vector<TimedOp>& ops);

}  // namespace whale::exec

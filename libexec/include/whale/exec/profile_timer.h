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
};

/// Median seconds of one call of `op` (steady_clock). Without before_sample, the number of
/// calls per sample is chosen once, from the time of the warm-up, and is the same for every
/// sample.
Seconds median_call_time_s(const std::function<void()>& op, const TimerOptions& options);

/// Evicts the CPU caches by writing a buffer of twice the last-level cache (sysconf; 64 MiB
/// when unknown; at most 1 GiB), one byte per 64-byte line. Training streams parameters,
/// gradients, optimizer state and every layer's activations through the caches each step, so
/// the ops it runs mostly start cold; an op timed hot on its own repeated buffers reads up to
/// 17% (GEMM) to 50% (layernorm) faster here, as a GPU's L2 would (which is why cuBLAS timings
/// flush it).
class CacheFlusher {
 public:
  CacheFlusher();
  void flush();
  std::size_t bytes() const { return lines_.size(); }
  /// Timer options whose every sample starts with flush() and then reads `hot` (count floats
  /// each) back into the caches: the inputs that the op before it in a training step has just
  /// written (a GEMM's activation or output gradient, GELU's input), while weights, saved
  /// activations and optimizer state stay cold. The flusher must outlive the options.
  struct HotBuffer {
    const float* data;
    std::size_t count;
  };
  TimerOptions cold_except(const TimerOptions& base, std::vector<HotBuffer> hot);

 private:
  std::vector<unsigned char> lines_;
  unsigned char round_ = 0;
  volatile float sink_ = 0;  // keeps the reads of the hot buffers
};

}  // namespace whale::exec

// File: profile_cache_flusher.h
// CacheFlusher: timer options for whale-profile that start every timed call from cold caches.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/profile/profile_timer.h"

namespace whale::exec {

/// Evicts the CPU caches by writing a buffer of twice the last-level cache (sysfs, else sysconf;
/// 64 MiB when unknown; at most 1 GiB), one byte per 64-byte line. A larger flush evicts nothing
/// more but times ops colder (sysconf reported a VM host's 256 MiB L3 for a guest's 32 MiB: a
/// width-128 block's GEMMs ran 1.6x slower after its 512 MiB flush; docs/fidelity.md). A training
/// step whose weights outgrow the cache streams them through it, so its ops start cold; an op
/// timed hot on its own repeated buffers reads up to 17% (large GEMMs) to 50% (layernorm) faster,
/// and small GEMMs up to 1.5x. whale-profile times both states and libsim prices between them by
/// the weight bytes a device's layers hold (cache_working_set.h).
class CacheFlusher {
 public:
  CacheFlusher();
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
  void flush();

  std::vector<unsigned char> lines_;
  unsigned char round_ = 0;
  volatile float sink_ = 0;  // keeps the reads of the hot buffers
};

}  // namespace whale::exec

// File: profile_cache_flusher.h
// CacheFlusher: timer options for whale-profile that start every timed call from cold caches.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/profile/profile_timer.h"
#include "whale/plan/units.h"

namespace whale::exec {

/// The bytes a flush writes: twice the last-level cache that sysfs reports (`sysfs_cache`), at
/// most 1 GiB; 64 MiB where sysfs reports none. sysconf is not asked: VMs whose sysfs lacks the
/// cache report the host's through it (508 MiB on a 2-vCPU guest whose read sweep shows 15-22).
std::size_t cache_flush_bytes(Bytes sysfs_cache);

/// Evicts the CPU caches by writing a buffer of cache_flush_bytes, one byte per 64-byte line. A
/// larger flush evicts nothing more but times ops colder and the profile longer (sysconf reported
/// a VM host's 256 MiB L3 for a guest's 32 MiB: a width-128 block's GEMMs ran 1.6x slower after
/// its 512 MiB flush; where a VM's sysconf reports 508 MiB and a sweep shows 19.4 MiB, its 1 GiB
/// flush timed the width-32 block at 27.8 GFLOP/s cold against 61.6 after a 39 MiB one, and the
/// whole profile took 65.6 s against 35.5; docs/fidelity.md). A training step whose working set
/// outgrows the cache walks it through the cache, so its ops start cold; an op whose operands
/// sit in the last-level cache ran 3% (a width-256 block's GEMMs) to 27% (GELU's forward)
/// faster, and a width-32 block's GEMMs 1.6x, in a quick profile of a 2-vCPU EPYC VM. whale-profile times both states and libsim picks one by the working set a
/// device's layers touch (cache_working_set.h).
class CacheFlusher {
 public:
  /// Flushes of cache_flush_bytes(sysfs_cache) (0: sysfs reports no cache).
  explicit CacheFlusher(Bytes sysfs_cache);
  /// A flusher of one core's private caches: each flush writes twice `l2_bytes` (the per-core
  /// L2 that sysconf reports, which a VM reports right; 1 MiB where it reports none), which
  /// evicts the caller's lines from L1 and L2 and leaves the last-level cache holding them. Its
  /// timings are an op's in training when its operands fit the last-level cache: between two
  /// uses of a layer's weights the step runs the other ops, whose own operands exceed L2.
  static CacheFlusher of_private_caches(long l2_bytes);
  /// The bytes each flush writes.
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
  struct FlushBytes {
    std::size_t bytes;
  };
  explicit CacheFlusher(FlushBytes flush) : lines_(flush.bytes, 0) {}
  void flush();

  std::vector<unsigned char> lines_;
  unsigned char round_ = 0;
  volatile float sink_ = 0;  // keeps the reads of the hot buffers
};

}  // namespace whale::exec

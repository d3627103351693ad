// File: profile_cupti_collector.h
// KernelActivityCollector: records the duration of every kernel launched while it is active,
// through CUPTI's activity API (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), and groups them by name.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/profile/profile_device_prober.h"

namespace whale::exec {

/// At most one collector may be active in a process (CUPTI's buffer callbacks are global).
class KernelActivityCollector {
 public:
  /// Registers the buffer callbacks and enables kernel activity records; kernel names are cut
  /// to `max_name_chars` characters.
  explicit KernelActivityCollector(std::size_t max_name_chars = 96);
  /// Disables the records if stop() was not called; never throws.
  ~KernelActivityCollector();
  KernelActivityCollector(const KernelActivityCollector&) = delete;
  KernelActivityCollector& operator=(const KernelActivityCollector&) = delete;

  /// Flushes CUPTI's buffers, disables the records and returns one timing per kernel name
  /// (demangled, cut to the constructor's length), sorted by name. The caller synchronizes the device first.
  std::vector<OpTiming> stop();

 private:
  bool active_ = false;
};

}  // namespace whale::exec

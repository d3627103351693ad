// File: profile_cupti_collector.h
// KernelActivityCollector: records the duration of every kernel launched while it is active,
// through CUPTI's activity API (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), and groups them by name.
#pragma once

#include <vector>

#include "whale/exec/profile/profile_device_prober.h"

namespace whale::exec {

/// At most one collector may be active in a process (CUPTI's buffer callbacks are global).
class KernelActivityCollector {
 public:
  /// Registers the buffer callbacks and enables kernel activity records.
  KernelActivityCollector();
  /// Disables the records if stop() was not called; never throws.
  ~KernelActivityCollector();
  KernelActivityCollector(const KernelActivityCollector&) = delete;
  KernelActivityCollector& operator=(const KernelActivityCollector&) = delete;

  /// Flushes CUPTI's buffers, disables the records and returns one timing per kernel name
  /// (demangled, cut to 96 characters), sorted by name. The caller synchronizes the device first.
  std::vector<OpTiming> stop();

 private:
  bool active_ = false;
};

}  // namespace whale::exec

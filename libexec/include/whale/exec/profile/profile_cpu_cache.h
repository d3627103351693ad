// File: profile_cpu_cache.h
// The last-level cache of a CPU as Linux describes it in sysfs, and the part one whale device
// (one process with its Eigen threads) may fill.
#pragma once

#include <string>

#include "whale/plan/units.h"

namespace whale::exec {

/// Where Linux describes the caches of the CPU whale-profile sizes its flushes by.
inline constexpr const char* kSysfsCacheDir = "/sys/devices/system/cpu/cpu0/cache";

struct LastLevelCache {
  Bytes size_bytes = 0;  // 0: unknown
  int shared_cpus = 1;   // CPUs that share it (shared_cpu_list)
  int level = 0;
};

/// The highest-level data or unified cache of `cache_dir` (a cpuN/cache folder: index*/level,
/// type, size such as "32768K", shared_cpu_list such as "0-1" or "0,2,4-7"); size 0 when the
/// folder or its files are missing or unreadable.
LastLevelCache read_last_level_cache(const std::string& cache_dir);

/// The CPUs a sysfs CPU list names ("0-3,8,10-11" is 7); 0 for an empty or malformed list.
int cpu_list_count(const std::string& list);

/// The cache one device running `threads` threads may fill when every CPU sharing the cache
/// runs a device: size x min(threads, shared) / shared.
Bytes cache_bytes_per_device(const LastLevelCache& cache, int threads);

}  // namespace whale::exec

// File: profile_cache_flusher.cpp
// CacheFlusher: a write of twice the last-level cache before each timed call, then a read of
// the buffers the call should find hot.
#include "whale/exec/profile/profile_cache_flusher.h"

#include <algorithm>

#include "whale/exec/profile/profile_cache_sweep.h"

namespace whale::exec {

std::size_t cache_flush_bytes(Bytes sysfs_cache) {
  constexpr std::size_t kUnknownCacheFlushBytes = std::size_t{64} << 20;
  if (sysfs_cache <= 0) return kUnknownCacheFlushBytes;
  return std::min(static_cast<std::size_t>(2 * sysfs_cache), std::size_t{1} << 30);
}

TimerOptions CacheFlusher::cold_except(const TimerOptions& base, std::vector<HotBuffer> hot) {
  TimerOptions options = base;
  options.before_sample = [this, hot = std::move(hot)] {
    flush();
    float sum = 0;
    for (const HotBuffer& b : hot) sum += read_lines(b.data, b.count);
    sink_ = sum;
  };
  return options;
}

CacheFlusher::CacheFlusher(Bytes sysfs_cache) : CacheFlusher(FlushBytes{cache_flush_bytes(sysfs_cache)}) {}

CacheFlusher CacheFlusher::of_private_caches(long l2_bytes) {
  constexpr std::size_t kUnknownL2Bytes = std::size_t{1} << 20;
  return CacheFlusher(FlushBytes{2 * (l2_bytes > 0 ? static_cast<std::size_t>(l2_bytes) : kUnknownL2Bytes)});
}

void CacheFlusher::flush() {
  ++round_;
  volatile unsigned char* line = lines_.data();
  for (std::size_t i = 0; i < lines_.size(); i += 64) line[i] = round_;
}

}  // namespace whale::exec

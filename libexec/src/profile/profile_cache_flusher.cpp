// File: profile_cache_flusher.cpp
// CacheFlusher: a write of twice the last-level cache before each timed call, then a read of
// the buffers the call should find hot.
#include "whale/exec/profile/profile_cache_flusher.h"
#include "whale/exec/profile/profile_cpu_cache.h"

#include <algorithm>

#include <unistd.h>

namespace whale::exec {
namespace {

std::size_t flush_bytes() {
  // sysfs describes the cache this CPU has; in a VM, sysconf may report the host's (256 MiB
  // where sysfs reads 32 MiB), and a flush eight times too large only slows the profile.
  const Bytes sysfs = read_last_level_cache("/sys/devices/system/cpu/cpu0/cache").size_bytes;
  const long llc = sysfs > 0 ? static_cast<long>(sysfs)
                             : std::max({sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE), 0L});
  const std::size_t twice = llc > 0 ? 2 * static_cast<std::size_t>(llc) : std::size_t{64} << 20;
  return std::min(twice, std::size_t{1} << 30);
}

/// Reads one float of every 64-byte line of `data`.
float touch(const float* data, std::size_t count) {
  float sum = 0;
  for (std::size_t i = 0; i < count; i += 16) sum += data[i];
  return sum;
}

}  // namespace

TimerOptions CacheFlusher::cold_except(const TimerOptions& base, std::vector<HotBuffer> hot) {
  TimerOptions options = base;
  options.before_sample = [this, hot = std::move(hot)] {
    flush();
    float sum = 0;
    for (const HotBuffer& b : hot) sum += touch(b.data, b.count);
    sink_ = sum;
  };
  return options;
}

CacheFlusher::CacheFlusher() : lines_(flush_bytes(), 0) {}

void CacheFlusher::flush() {
  ++round_;
  volatile unsigned char* line = lines_.data();
  for (std::size_t i = 0; i < lines_.size(); i += 64) line[i] = round_;
}

}  // namespace whale::exec

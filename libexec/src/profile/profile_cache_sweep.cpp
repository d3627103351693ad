// File: profile_cache_sweep.cpp
// Read-bandwidth sweep over working-set sizes and the capacity where it falls to memory's level.
#include "whale/exec/profile/profile_cache_sweep.h"

#include <algorithm>
#include <cmath>

#include "whale/exec/profile/profile_statistics.h"

namespace whale::exec {
namespace {

constexpr std::size_t kLineFloats = 64 / sizeof(float);
constexpr double kLeastCacheToMemoryRatio = 1.5;

}  // namespace

float read_lines(const float* data, std::size_t count) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 * kLineFloats <= count; i += 4 * kLineFloats) {
    s0 += data[i];
    s1 += data[i + kLineFloats];
    s2 += data[i + 2 * kLineFloats];
    s3 += data[i + 3 * kLineFloats];
  }
  for (; i < count; i += kLineFloats) s0 += data[i];
  return (s0 + s1) + (s2 + s3);
}

Bytes cache_capacity_from_sweep(const std::vector<CacheSweepPoint>& sweep) {
  const std::size_t n = sweep.size();
  if (n < 4) return 0;
  const std::size_t half = n / 2;
  double cache_level = 0;
  for (std::size_t i = 0; i < half; ++i) cache_level = std::max(cache_level, sweep[i].read_bytes_per_s);
  std::vector<double> tail;
  for (std::size_t i = half; i < n; ++i) tail.push_back(sweep[i].read_bytes_per_s);
  const double memory_level = median(std::move(tail));
  if (!(cache_level >= kLeastCacheToMemoryRatio * memory_level)) return 0;
  const double mean = 0.5 * (cache_level + memory_level);
  if (sweep[0].read_bytes_per_s < mean) return 0;
  // The last point still at the cache's side of the mean: a lone slow sample before it (a
  // transient on a shared machine) is a dip, not the cache's end.
  std::size_t last_cached = n - 1;
  while (sweep[last_cached].read_bytes_per_s < mean) --last_cached;
  if (last_cached == n - 1) return 0;
  const CacheSweepPoint& a = sweep[last_cached];
  const CacheSweepPoint& b = sweep[last_cached + 1];
  const double t = (a.read_bytes_per_s - mean) / (a.read_bytes_per_s - b.read_bytes_per_s);
  return std::exp(std::log(a.bytes) + t * (std::log(b.bytes) - std::log(a.bytes)));
}

std::vector<CacheSweepPoint> sweep_read_bandwidth(Bytes smallest, Bytes largest, const TimerOptions& timer) {
  std::vector<float> buffer(static_cast<std::size_t>(largest / sizeof(float)) + kLineFloats, 1.0f);
  volatile float sink = 0;
  std::vector<CacheSweepPoint> sweep;
  // Sizes a factor sqrt(2) apart, as whole lines; the last step reaches `largest` within rounding.
  for (double bytes = smallest; bytes <= largest * (1 + 1e-9); bytes *= std::sqrt(2.0)) {
    const std::size_t count = static_cast<std::size_t>(bytes / sizeof(float)) / kLineFloats * kLineFloats;
    const Seconds t = median_call_time_s([&] { sink = sink + read_lines(buffer.data(), count); }, timer);
    sweep.push_back({static_cast<double>(count * sizeof(float)), count * sizeof(float) / t});
  }
  return sweep;
}

}  // namespace whale::exec

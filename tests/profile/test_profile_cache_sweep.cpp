// File: test_profile_cache_sweep.cpp
// The last-level cache's capacity from a read-bandwidth sweep: hand-made sweeps, and the sweep's
// own sizes.
#include <doctest/doctest.h>

#include <cmath>

#include "whale/exec/profile/profile_cache_sweep.h"

using namespace whale::exec;
using whale::Bytes;

namespace {

constexpr double kMiB = 1048576.0;

/// Points at 1, 2, 4, ... MiB with these bandwidths in GB/s.
std::vector<CacheSweepPoint> doubling_sweep(const std::vector<double>& gbytes_per_s) {
  std::vector<CacheSweepPoint> sweep;
  double bytes = kMiB;
  for (double g : gbytes_per_s) {
    sweep.push_back({bytes, g * 1e9});
    bytes *= 2;
  }
  return sweep;
}

}  // namespace

TEST_CASE("the capacity is where the bandwidth falls below the mean of the cache's and memory's levels") {
  // Cache level 100 (best of the first half), memory 20 (median of the second), mean 60: the
  // fall from 100 at 8 MiB to 20 at 16 MiB crosses 60 halfway, at 8 x sqrt(2) MiB in log size.
  const Bytes capacity = cache_capacity_from_sweep(doubling_sweep({100, 100, 100, 100, 20, 20, 20, 20}));
  CHECK(capacity == doctest::Approx(8 * std::sqrt(2.0) * kMiB).epsilon(1e-12));
}

TEST_CASE("a point at the mean itself is still cached: the capacity is that point's size") {
  // Levels 80 and 20, mean 50: 8 MiB reads exactly 50, 16 MiB is the first below.
  CHECK(cache_capacity_from_sweep(doubling_sweep({80, 80, 80, 50, 20, 20, 20, 20})) == doctest::Approx(8 * kMiB));
}

TEST_CASE("a lone slow point inside the cache is a dip, not the cache's end") {
  // Levels 100 and 20 as in the first case; 2 MiB read 50 (below the mean 60) once: the
  // capacity is where the sweep leaves the cache for good, as without the dip.
  const Bytes capacity = cache_capacity_from_sweep(doubling_sweep({100, 50, 100, 100, 20, 20, 20, 20}));
  CHECK(capacity == doctest::Approx(8 * std::sqrt(2.0) * kMiB).epsilon(1e-12));
}

TEST_CASE("a sweep without a distinct cache level gives no capacity") {
  CHECK(cache_capacity_from_sweep(doubling_sweep({30, 30, 29, 28, 27, 27, 26, 26})) == 0);  // 30 < 1.5 x 26.5
  CHECK(cache_capacity_from_sweep(doubling_sweep({10, 100, 100, 20, 20, 20})) == 0);        // first point below 60
  CHECK(cache_capacity_from_sweep(doubling_sweep({100, 100, 20})) == 0);                    // too few points
  CHECK(cache_capacity_from_sweep(doubling_sweep({100, 100, 100, 100, 20, 20, 20, 100})) == 0);  // ends at the cache level
  CHECK(cache_capacity_from_sweep({}) == 0);
}

TEST_CASE("the sweep reads sizes a factor sqrt(2) apart, in whole lines, up to the largest") {
  TimerOptions timer;
  timer.samples = 1;
  timer.min_sample_s = 1e-4;
  const std::vector<CacheSweepPoint> sweep = sweep_read_bandwidth(kMiB, 4 * kMiB, timer);
  REQUIRE(sweep.size() == 5);  // 1, 1.41, 2, 2.83, 4 MiB
  CHECK(sweep.front().bytes == kMiB);
  CHECK(sweep.back().bytes == 4 * kMiB);
  for (size_t i = 0; i < sweep.size(); ++i) {
    CHECK(std::fmod(sweep[i].bytes, 64.0) == 0);
    CHECK(sweep[i].read_bytes_per_s > 0);
    if (i > 0) CHECK(sweep[i].bytes / sweep[i - 1].bytes == doctest::Approx(std::sqrt(2.0)).epsilon(1e-4));
  }
}

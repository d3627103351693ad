// File: profile_cache_sweep.h
// The last-level cache one process sees, measured: read bandwidth over a sweep of working-set
// sizes, and the size where it falls from the cache's level to memory's. For machines whose
// sysfs does not describe their caches (some VMs), where sysconf reports the host's.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/profile/profile_timer.h"
#include "whale/plan/units.h"

namespace whale::exec {

struct CacheSweepPoint {
  Bytes bytes = 0;                        // working set read over and over
  BytesPerSecond read_bytes_per_s = 0;    // its read bandwidth, warm (the set read before)
};

/// Reads every 64-byte line of data[0, count) once, four lines in flight; returns a sum the
/// caller keeps so that the reads are not optimised away.
float read_lines(const float* data, std::size_t count);

/// The capacity a sweep shows (points in ascending size): the cache level is the best bandwidth
/// of the sweep's first half (in log size), memory's the median of its second half; the
/// capacity is where the bandwidth falls below their arithmetic mean for good (after the last
/// point at or above it; a slow point before that is a transient, not the cache's end),
/// interpolated in log size between the two points around that fall. 0 (unknown) when the cache
/// level is not 1.5 times memory's, when the first point is already below the mean, when no
/// point after it falls below, or with under 4 points.
Bytes cache_capacity_from_sweep(const std::vector<CacheSweepPoint>& sweep);

/// Read bandwidth of this thread over working sets from `smallest` to `largest` bytes, a
/// factor sqrt(2) apart; each the median of `timer`'s samples of whole passes over the set.
std::vector<CacheSweepPoint> sweep_read_bandwidth(Bytes smallest, Bytes largest, const TimerOptions& timer);

}  // namespace whale::exec

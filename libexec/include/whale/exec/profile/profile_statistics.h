// File: profile_statistics.h
// The arithmetic of whale-profile, kept apart from the measuring so that it can be tested with
// exact numbers: medians, the latency + bandwidth least-squares fit, nccl-tests' bus-bandwidth
// factors and efficiency curves relative to a peak.
#pragma once

#include <vector>

#include "whale/plan/device_profile.h"
#include "whale/plan/units.h"

namespace whale::exec {

/// The median of `values` (the mean of the two middle values for an even count).
/// Precondition: values is not empty.
double median(std::vector<double> values);

/// One timed transfer: `bytes` moved in `time_s`.
struct TimedTransfer {
  Bytes bytes = 0;
  Seconds time_s = 0;
};

/// time(bytes) = latency_s + bytes / bandwidth_bytes_per_s.
struct LatencyBandwidthFit {
  Seconds latency_s = 0;
  BytesPerSecond bandwidth_bytes_per_s = 0;
};

/// Least-squares fit of time = latency + bytes / bandwidth, weighted by 1 / time^2 so that
/// every point counts by its relative error (small messages fix the latency, large ones the
/// bandwidth). Exact data gives the exact line. A negative intercept (noise) is clamped to 0.
/// Throws whale::Error (yaml path `what`) when there are fewer than two distinct sizes or the
/// fitted bandwidth is not positive (times that do not grow with size).
LatencyBandwidthFit fit_latency_bandwidth(const std::vector<TimedTransfer>& samples,
                                          const char* what);

/// nccl-tests' bus-bandwidth factor of an all-reduce over `ranks` ranks: 2 (n - 1) / n,
/// so busbw = algbw * factor. Point-to-point (sendrecv) has factor 1.
double all_reduce_bus_factor(int ranks);

/// An efficiency curve from throughputs measured at sizes: efficiency = min(1, achieved / peak)
/// (the profile schema's range is (0, 1]; a cache-resident copy can beat the DRAM figure used
/// as the peak), points sorted by size. Precondition: equal lengths, peak > 0.
plan::EfficiencyCurve efficiency_curve(const std::vector<double>& sizes,
                                       const std::vector<double>& achieved, double peak);

/// The GEMM efficiency curve from throughputs measured at FLOP counts: efficiency_curve, then
/// made non-decreasing in FLOPs (each point at least the best of the smaller ones). The curve is
/// read at the FLOPs of other shapes than the probe's, and a dip of one probe shape (a width
/// whose leading dimensions hit cache-set conflicts or a partial wave of thread blocks) says
/// nothing about them; a GEMM of more FLOPs runs at least as efficiently as a smaller one tiled
/// the same way, so the envelope is what the simulator should read.
plan::EfficiencyCurve gemm_efficiency_curve(const std::vector<double>& flops,
                                            const std::vector<double>& achieved, double peak);

/// The largest value of `values`. Precondition: values is not empty.
double max_value(const std::vector<double>& values);

}  // namespace whale::exec

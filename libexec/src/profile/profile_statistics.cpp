// File: profile_statistics.cpp
// Medians, the weighted latency + bandwidth least-squares fit, bus factors, efficiency curves.
#include "whale/exec/profile/profile_statistics.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "whale/plan/error.h"
#include "whale/plan/check.h"

namespace whale::exec {

double median(std::vector<double> values) {
  WHALE_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double max_value(const std::vector<double>& values) {
  WHALE_CHECK(!values.empty(), "max_value of no values");
  return *std::max_element(values.begin(), values.end());
}

LatencyBandwidthFit fit_latency_bandwidth(const std::vector<TimedTransfer>& samples,
                                          const char* what) {
  std::set<double> sizes;
  for (const TimedTransfer& s : samples) sizes.insert(s.bytes);
  if (sizes.size() < 2)
    throw Error("", what, "timings at two or more distinct message sizes for the fit",
                "widen the sweep of message sizes");
  // Minimise sum w_i (a + b x_i - y_i)^2 with w_i = 1 / y_i^2: the 2x2 normal equations.
  double sw = 0, swx = 0, swy = 0, swxx = 0, swxy = 0;
  for (const TimedTransfer& s : samples) {
    const double w = s.time_s > 0 ? 1.0 / (s.time_s * s.time_s) : 1.0;
    sw += w;
    swx += w * s.bytes;
    swy += w * s.time_s;
    swxx += w * s.bytes * s.bytes;
    swxy += w * s.bytes * s.time_s;
  }
  const double det = sw * swxx - swx * swx;
  const double slope = (sw * swxy - swx * swy) / det;       // seconds per byte
  const double intercept = (swy - slope * swx) / sw;        // seconds
  if (!(slope > 0) || !std::isfinite(slope))
    throw Error("", what, "times that grow with the message size (a positive bandwidth)",
                "the timings are dominated by noise; rerun without --quick or on idle cores");
  LatencyBandwidthFit fit;
  fit.latency_s = std::max(0.0, intercept);
  fit.bandwidth_bytes_per_s = 1.0 / slope;
  return fit;
}

double all_reduce_bus_factor(int ranks) {
  WHALE_CHECK(ranks >= 1, "all_reduce_bus_factor of " + std::to_string(ranks) + " ranks");
  return 2.0 * (ranks - 1) / ranks;
}

plan::EfficiencyCurve efficiency_curve(const std::vector<double>& sizes,
                                       const std::vector<double>& achieved, double peak) {
  WHALE_CHECK(sizes.size() == achieved.size() && peak > 0, "efficiency_curve: " + std::to_string(sizes.size()) + " sizes, " + std::to_string(achieved.size()) + " rates, peak " + std::to_string(peak));
  std::vector<plan::EfficiencyPoint> points;
  for (std::size_t i = 0; i < sizes.size(); ++i) points.push_back({sizes[i], std::min(1.0, achieved[i] / peak)});
  std::sort(points.begin(), points.end(),
            [](const plan::EfficiencyPoint& a, const plan::EfficiencyPoint& b) {
              return a.size < b.size;
            });
  return plan::EfficiencyCurve(std::move(points));
}

plan::EfficiencyCurve gemm_efficiency_curve(const std::vector<double>& flops,
                                            const std::vector<double>& achieved, double peak) {
  std::vector<plan::EfficiencyPoint> points = efficiency_curve(flops, achieved, peak).points();
  for (std::size_t i = 1; i < points.size(); ++i)
    points[i].efficiency = std::max(points[i].efficiency, points[i - 1].efficiency);
  return plan::EfficiencyCurve(std::move(points));
}

}  // namespace whale::exec

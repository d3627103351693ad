// File: efficiency_curve.cpp
// EfficiencyCurve: piecewise-linear interpolation in log(size), clamped at both ends.
#include <algorithm>
#include <cmath>

#include "whale/plan/device_profile.h"

namespace whale::plan {

EfficiencyCurve::EfficiencyCurve(std::vector<EfficiencyPoint> points) : points_(std::move(points)) {
  std::stable_sort(points_.begin(), points_.end(),
                   [](const EfficiencyPoint& a, const EfficiencyPoint& b) { return a.size < b.size; });
}

double EfficiencyCurve::at(double size) const {
  if (points_.empty()) return 1.0;
  if (size <= points_.front().size) return points_.front().efficiency;
  if (size >= points_.back().size) return points_.back().efficiency;
  // First point strictly above `size`; the segment is [upper - 1, upper].
  const auto upper = std::upper_bound(
      points_.begin(), points_.end(), size,
      [](double s, const EfficiencyPoint& p) { return s < p.size; });
  const EfficiencyPoint& hi = *upper;
  const EfficiencyPoint& lo = *(upper - 1);
  if (hi.size <= lo.size) return hi.efficiency;
  const double t = (std::log(size) - std::log(lo.size)) / (std::log(hi.size) - std::log(lo.size));
  return lo.efficiency + t * (hi.efficiency - lo.efficiency);
}

}  // namespace whale::plan

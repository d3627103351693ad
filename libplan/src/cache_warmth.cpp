// File: cache_warmth.cpp
// The cold/warm blend of a device profile's GEMM curves and op-class bandwidths.
#include "whale/plan/cache_warmth.h"

#include <algorithm>

namespace whale::plan {
namespace {

/// The rate (efficiency or bandwidth) at which an op runs when `f` of its time-at-warm-rate
/// share is warm: time adds, so rates blend harmonically.
double blended_rate(double cold, double warm, double f) { return 1.0 / (f / warm + (1.0 - f) / cold); }

EfficiencyCurve blended_curve(const EfficiencyCurve& cold, const EfficiencyCurve& warm, double f) {
  std::vector<double> sizes;
  for (const EfficiencyPoint& p : cold.points()) sizes.push_back(p.size);
  for (const EfficiencyPoint& p : warm.points()) sizes.push_back(p.size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<EfficiencyPoint> points;
  for (double size : sizes) points.push_back({size, blended_rate(cold.at(size), warm.at(size), f)});
  return EfficiencyCurve(std::move(points));
}

/// Blends each class of `cold` that `warm` has too, in place; the others stay cold.
void blend_rates(std::map<std::string, BytesPerSecond>& cold, const std::map<std::string, BytesPerSecond>& warm,
                 double f) {
  for (auto& [op_class, bandwidth] : cold) {
    const auto it = warm.find(op_class);
    if (it != warm.end()) bandwidth = blended_rate(bandwidth, it->second, f);
  }
}

/// A class's figure for the backward pass in a profile's pair of maps: its own backward figure,
/// else its forward's (what DeviceProfile::op_backward_bandwidth prices); 0 when neither.
BytesPerSecond backward_rate(const std::map<std::string, BytesPerSecond>& forward,
                             const std::map<std::string, BytesPerSecond>& backward, const std::string& op_class) {
  if (const auto it = backward.find(op_class); it != backward.end()) return it->second;
  const auto it = forward.find(op_class);
  return it == forward.end() ? 0 : it->second;
}

/// The blended backward map: every class of the cold forward map whose backward has a figure of
/// its own, cold or warm, gets the blend of the two backward rates (each falling back to its
/// forward's); a class with neither keeps following its blended forward figure.
std::map<std::string, BytesPerSecond> blended_backward_rates(const DeviceProfile& profile, double f) {
  const auto& cold_forward = profile.op_bandwidth_bytes_per_s;
  const auto& cold_backward = profile.op_backward_bandwidth_bytes_per_s;
  const auto& warm_forward = profile.cache.warm_op_bandwidth_bytes_per_s;
  const auto& warm_backward = profile.cache.warm_op_backward_bandwidth_bytes_per_s;
  std::map<std::string, BytesPerSecond> out;
  for (const auto& [op_class, forward] : cold_forward) {
    if (!cold_backward.count(op_class) && !warm_backward.count(op_class)) continue;
    const BytesPerSecond cold = backward_rate(cold_forward, cold_backward, op_class);
    const BytesPerSecond warm = backward_rate(warm_forward, warm_backward, op_class);
    out[op_class] = warm > 0 ? blended_rate(cold, warm, f) : cold;
  }
  return out;
}

}  // namespace

DeviceProfile with_warm_fraction(const DeviceProfile& profile, double warm_fraction) {
  const double f = std::clamp(warm_fraction, 0.0, 1.0);
  if (f == 0 || profile.cache.empty()) return profile;
  DeviceProfile out = profile;
  for (auto& [precision, curve] : out.gemm_efficiency) {
    auto warm = profile.cache.warm_gemm_efficiency.find(precision);
    if (warm != profile.cache.warm_gemm_efficiency.end() && !curve.empty() && !warm->second.empty()) {
      curve = blended_curve(curve, warm->second, f);
    }
  }
  blend_rates(out.op_bandwidth_bytes_per_s, profile.cache.warm_op_bandwidth_bytes_per_s, f);
  out.op_backward_bandwidth_bytes_per_s = blended_backward_rates(profile, f);
  return out;
}

}  // namespace whale::plan

// File: device_profile.cpp
// DeviceProfile lookups: exact, per precision (the fallbacks are effective_gemm_precision's).
#include "whale/plan/device_profile.h"

#include "whale/plan/error.h"

namespace whale::plan {

FlopsPerSecond DeviceProfile::peak(Precision p) const {
  auto it = peak_flops_per_s.find(p);
  if (it == peak_flops_per_s.end()) {
    throw Error("profile " + name, std::string("peak_tflops.") + to_string(p),
                std::string("device '") + name + "' has no peak for " + to_string(p),
                "add peak_tflops." + std::string(to_string(p)) + " to its profile or use another precision");
  }
  return it->second;
}

const EfficiencyCurve& DeviceProfile::gemm_curve(Precision p) const {
  static const EfficiencyCurve kEmpty;
  auto it = gemm_efficiency.find(p);
  return it == gemm_efficiency.end() ? kEmpty : it->second;
}

namespace {

/// The first class of `op_classes` (in key order) that `op_name` contains; end() when none.
std::map<std::string, BytesPerSecond>::const_iterator matching_op_class(
    const std::map<std::string, BytesPerSecond>& op_classes, const std::string& op_name) {
  for (auto it = op_classes.begin(); it != op_classes.end(); ++it) {
    if (op_name.find(it->first) != std::string::npos) return it;
  }
  return op_classes.end();
}

}  // namespace

BytesPerSecond DeviceProfile::op_bandwidth(const std::string& op_name) const {
  const auto match = matching_op_class(op_bandwidth_bytes_per_s, op_name);
  return match == op_bandwidth_bytes_per_s.end() ? 0 : match->second;
}

BytesPerSecond DeviceProfile::op_backward_bandwidth(const std::string& op_name) const {
  const auto match = matching_op_class(op_bandwidth_bytes_per_s, op_name);
  if (match == op_bandwidth_bytes_per_s.end()) return 0;
  const auto backward = op_backward_bandwidth_bytes_per_s.find(match->first);
  return backward != op_backward_bandwidth_bytes_per_s.end() ? backward->second : match->second;
}

}  // namespace whale::plan

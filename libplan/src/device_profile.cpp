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

BytesPerSecond DeviceProfile::op_bandwidth(const std::string& op_name) const {
  for (const auto& [op_class, bandwidth] : op_bandwidth_bytes_per_s) {
    if (op_name.find(op_class) != std::string::npos) return bandwidth;
  }
  return 0;
}

BytesPerSecond DeviceProfile::op_backward_bandwidth(const std::string& op_name) const {
  for (const auto& [op_class, bandwidth] : op_bandwidth_bytes_per_s) {
    if (op_name.find(op_class) == std::string::npos) continue;
    const auto backward = op_backward_bandwidth_bytes_per_s.find(op_class);
    return backward != op_backward_bandwidth_bytes_per_s.end() ? backward->second : bandwidth;
  }
  return 0;
}

}  // namespace whale::plan

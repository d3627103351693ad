// File: device_profile.cpp
// DeviceProfile lookups with their precision fallbacks.
#include "whale/plan/device_profile.h"

#include "whale/plan/error.h"

namespace whale::plan {
namespace {

// bf16 falls back to fp16 and tf32 to fp32; fp32 and fp16 have no fallback.
bool fallback_of(Precision p, Precision* out) {
  if (p == Precision::bf16) { *out = Precision::fp16; return true; }
  if (p == Precision::tf32) { *out = Precision::fp32; return true; }
  return false;
}

}  // namespace

FlopsPerSecond DeviceProfile::peak(Precision p) const {
  auto it = peak_flops_per_s.find(p);
  Precision fallback;
  if (it == peak_flops_per_s.end() && fallback_of(p, &fallback)) it = peak_flops_per_s.find(fallback);
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
  Precision fallback;
  if (it == gemm_efficiency.end() && fallback_of(p, &fallback)) it = gemm_efficiency.find(fallback);
  return it == gemm_efficiency.end() ? kEmpty : it->second;
}

BytesPerSecond DeviceProfile::op_bandwidth(const std::string& op_name) const {
  for (const auto& [op_class, bandwidth] : op_bandwidth_bytes_per_s) {
    if (op_name.find(op_class) != std::string::npos) return bandwidth;
  }
  return 0;
}

}  // namespace whale::plan

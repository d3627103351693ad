// File: calibration.cpp
// The fitted calibration of a profile applied to the simulator's figures (calibration.h).
#include "whale/sim/calibration.h"

#include <algorithm>

#include "whale/sim/op_cost.h"

namespace whale::sim {

double gemm_shape_scale(Flops kernel_flops, const plan::ProfileCalibration& calibration) {
  if (kernel_flops < plan::kGemmMediumFromFlops) return calibration.gemm_small_scale;
  if (kernel_flops < plan::kGemmLargeFromFlops) return calibration.gemm_medium_scale;
  return calibration.gemm_large_scale;
}

Seconds calibrated_gemm_s(Seconds kernel_s, Flops kernel_flops, const plan::DeviceProfile& profile) {
  const plan::ProfileCalibration& c = profile.calibration;
  return kernel_s / (c.gemm_efficiency_scale * gemm_shape_scale(kernel_flops, c));
}

Seconds calibrated_memory_op_s(Seconds kernel_s, const plan::DeviceProfile& profile) {
  return kernel_s * profile.calibration.memory_op_time_scale;
}

Seconds op_launch_s(const plan::DeviceProfile& profile) {
  return profile.kernel_launch_s + profile.calibration.kernel_overhead_s;
}

void add_layer_overhead(const plan::DeviceProfile& profile, LayerCost* cost) {
  cost->forward_s += profile.calibration.layer_overhead_s;
  cost->backward_s += profile.calibration.layer_overhead_s;
}

Seconds step_overhead_s(const plan::Plan& plan) {
  Seconds out = 0;
  for (const auto& [name, profile] : plan.cluster.profiles) {
    out = std::max(out, profile.calibration.step_overhead_s);
  }
  return out;
}

}  // namespace whale::sim

// File: calibration.cpp
// The fitted calibration of a profile applied to the simulator's figures (calibration.h).
#include "whale/sim/calibration.h"

#include <algorithm>

#include "whale/sim/op_cost.h"

namespace whale::sim {

Seconds calibrated_gemm_s(Seconds kernel_s, const plan::DeviceProfile& profile) {
  return kernel_s / profile.calibration.gemm_efficiency_scale;
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

// File: profile_calibration.cpp
// ProfileCalibration's default check.
#include "whale/plan/profile_calibration.h"

namespace whale::plan {

bool ProfileCalibration::is_default() const {
  const ProfileCalibration defaults;
  return source.empty() && gemm_efficiency_scale == defaults.gemm_efficiency_scale &&
         memory_op_time_scale == defaults.memory_op_time_scale && kernel_overhead_s == 0 &&
         layer_overhead_s == 0 && step_overhead_s == 0 && micro_batch_overhead_s == 0 && memory_reserve_bytes == 0 &&
         gemm_small_scale == 1.0 && gemm_medium_scale == 1.0 && gemm_large_scale == 1.0 &&
         activation_memory_scale == 1.0 && links.empty();
}

}  // namespace whale::plan

// File: profile_op_class_rates.cpp
// op_class_rates (profile_op_class_rates.h).
#include "whale/exec/profile/profile_op_class_rates.h"

namespace whale::exec {

OpClassRates op_class_rates(Bytes model_bytes, Seconds forward_s, Seconds backward_s,
                            Seconds gemm_s, bool has_backward) {
  const Seconds forward_class_s = forward_s - gemm_s;
  if (!has_backward) return {forward_class_s > 0 ? model_bytes / forward_class_s : 0.0, 0.0};
  const Seconds backward_class_s = backward_s - 2.0 * gemm_s;
  if (forward_class_s > 0 && backward_class_s > 0) {
    return {model_bytes / forward_class_s, model_bytes / backward_class_s};
  }
  const Seconds mean_s = (forward_class_s + backward_class_s) / 2.0;
  return {mean_s > 0 ? model_bytes / mean_s : 0.0, 0.0};
}

}  // namespace whale::exec

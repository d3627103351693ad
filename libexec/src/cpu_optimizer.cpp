// File: cpu_optimizer.cpp
// CPU AdamW update (element-wise, moments kept in float, arithmetic in double).
#include <cmath>

#include "cpu_backend_impl.h"

namespace whale::exec::cpu {

void CpuBackend::adamw_update(float* param, const float* grad, float* m, float* v,
                              std::size_t count, double lr, double beta1, double beta2,
                              double eps, double weight_decay, int step) {
  const double m_correction = 1.0 - std::pow(beta1, step);
  const double v_correction = 1.0 - std::pow(beta2, step);
  for (std::size_t i = 0; i < count; ++i) {
    const double g = grad[i];
    const double m_new = beta1 * m[i] + (1.0 - beta1) * g;
    const double v_new = beta2 * v[i] + (1.0 - beta2) * g * g;
    m[i] = static_cast<float>(m_new);
    v[i] = static_cast<float>(v_new);
    const double update =
        (m_new / m_correction) / (std::sqrt(v_new / v_correction) + eps) + weight_decay * param[i];
    param[i] = static_cast<float>(param[i] - lr * update);
  }
}

}  // namespace whale::exec::cpu

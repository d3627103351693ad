// File: adamw_math.h
// The AdamW element update (decoupled weight decay, bias-corrected moments), fp32 master weight
// and moments, shared by the multi-tensor CUDA kernel and the host tests.
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// A step's scalars; the step-dependent and 1 - beta terms are computed on the host in double
/// (adamw_scalars) and rounded once, so no float 1 - 0.9 error enters the moments.
struct AdamwScalars {
  float lr, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay;
  float m_correction;  // 1 - beta1^step
  float v_correction;  // 1 - beta2^step
};

inline AdamwScalars adamw_scalars(double lr, double beta1, double beta2, double eps,
                                  double weight_decay, int step) {
  return {static_cast<float>(lr),           static_cast<float>(beta1),
          static_cast<float>(1.0 - beta1),  static_cast<float>(beta2),
          static_cast<float>(1.0 - beta2),  static_cast<float>(eps),
          static_cast<float>(weight_decay), static_cast<float>(1.0 - pow(beta1, step)),
          static_cast<float>(1.0 - pow(beta2, step))};
}

/// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m^ / (sqrt(v^) + eps) + wd p).
WHALE_HOST_DEVICE void adamw_element(float& p, float g, float& m, float& v, const AdamwScalars& s) {
  m = s.beta1 * m + s.one_minus_beta1 * g;
  v = s.beta2 * v + s.one_minus_beta2 * g * g;
  p -= s.lr * ((m / s.m_correction) / (sqrtf(v / s.v_correction) + s.eps) + s.weight_decay * p);
}

}  // namespace whale::exec::kmath

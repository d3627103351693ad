// File: sgd_math.h
// The SGD-with-momentum element update as PyTorch's torch.optim.SGD takes it (L2 weight decay
// added to the gradient, dampening 0, no Nesterov), fp32 master weight and momentum buffer,
// shared by the multi-tensor CUDA kernel and the host tests.
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// A step's scalars (no step-dependent term: a buffer that starts at zero makes the first
/// step's buffer the gradient itself, as PyTorch's first step does).
struct SgdScalars {
  float lr, momentum, weight_decay;
};

inline SgdScalars sgd_scalars(double lr, double momentum, double weight_decay) {
  return {static_cast<float>(lr), static_cast<float>(momentum), static_cast<float>(weight_decay)};
}

/// d = g + wd p; buf = momentum buf + d; p -= lr buf.
WHALE_HOST_DEVICE void sgd_element(float& p, float g, float& buf, const SgdScalars& s) {
  const float d = g + s.weight_decay * p;
  buf = s.momentum * buf + d;
  p -= s.lr * buf;
}

}  // namespace whale::exec::kmath

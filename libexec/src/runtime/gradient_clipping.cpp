// File: gradient_clipping.cpp
// clip_coefficient: megatron/core/optimizer/clip_grads.py's clip_coeff.
#include "whale/exec/runtime/gradient_clipping.h"

namespace whale::exec {

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  const double coefficient = max_norm / (norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

}  // namespace whale::exec

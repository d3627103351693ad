// File: rope_math.h
// Rotary position embedding (RoPE) in the Llama / Hugging Face "rotate_half" convention: a head
// of size HS is two halves x1 = x[0, HS/2) and x2 = x[HS/2, HS); pair i rotates by the angle
// position * theta^(-2i/HS). Shared by the CUDA kernels, the CPU backend and the host tests.
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// cos and sin of pair i's angle at `position`, the angle and its functions in double, then
/// rounded (the same bits on host and device up to the libraries' last-place accuracy).
struct RopeRotation {
  float cos, sin;
};
WHALE_HOST_DEVICE RopeRotation rope_rotation(int position, int pair, int head_size, double theta) {
  const double inverse_frequency = pow(theta, -2.0 * pair / head_size);
  const double angle = position * inverse_frequency;
  return {static_cast<float>(cos(angle)), static_cast<float>(sin(angle))};
}

/// The rotated pair (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin).
struct RopePair {
  float first, second;
};
WHALE_HOST_DEVICE RopePair rope_rotate(float x1, float x2, RopeRotation r) {
  return {x1 * r.cos - x2 * r.sin, x2 * r.cos + x1 * r.sin};
}

/// Backward is the inverse rotation of the gradient pair (the transpose of an orthogonal map).
WHALE_HOST_DEVICE RopePair rope_rotate_back(float d1, float d2, RopeRotation r) {
  return {d1 * r.cos + d2 * r.sin, d2 * r.cos - d1 * r.sin};
}

}  // namespace whale::exec::kmath

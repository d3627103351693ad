// File: elementwise_math.h
// Element arithmetic of the point-wise kernels: GELU (tanh approximation) and SwiGLU forward and
// backward, residual add, bias, token + position embedding. Shared by the CUDA kernels, the CPU
// backend (SwiGLU) and host tests.
#pragma once

#include <stddef.h>

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;            // GPT-2's tanh approximation

/// tanh(sqrt(2/pi) (x + 0.044715 x^3)).
WHALE_HOST_DEVICE float gelu_tanh_term(float x) { return tanhf(kGeluScale * (x + kGeluCubic * x * x * x)); }

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
WHALE_HOST_DEVICE float gelu_forward(float x) { return 0.5f * x * (1.0f + gelu_tanh_term(x)); }

/// d GELU / dx at x.
WHALE_HOST_DEVICE float gelu_derivative(float x) {
  const float t = gelu_tanh_term(x);
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
}

/// SiLU's sigmoid 1 / (1 + exp(-x)).
WHALE_HOST_DEVICE float silu_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/// SwiGLU: silu(gate) * up = gate * sigmoid(gate) * up.
WHALE_HOST_DEVICE float swiglu_forward(float gate, float up) {
  return gate * silu_sigmoid(gate) * up;
}

/// The two partial derivatives of SwiGLU times dout: d/d gate = up * s (1 + gate (1 - s)),
/// d/d up = silu(gate), with s = sigmoid(gate).
struct SwigluGrad {
  float dgate, dup;
};
WHALE_HOST_DEVICE SwigluGrad swiglu_backward(float gate, float up, float dout) {
  const float s = silu_sigmoid(gate);
  return {dout * up * s * (1.0f + gate * (1.0f - s)), dout * gate * s};
}

/// The residual add: a + b.
WHALE_HOST_DEVICE float residual_add(float a, float b) { return a + b; }

/// The channel of flat element i of an (N, C) row-major tensor (for bias add).
WHALE_HOST_DEVICE int channel_of(size_t i, int channels) { return static_cast<int>(i % channels); }

/// The sum over rows r = 0, 1, ... of term(r), in double in that order, rounded to float: the
/// per-column parameter gradients (bias, layernorm weight and bias) as the CPU backend sums them.
template <class Term>
WHALE_HOST_DEVICE float ordered_row_sum(int rows, Term term) {
  double sum = 0.0;
  for (int r = 0; r < rows; ++r) sum += term(r);
  return static_cast<float>(sum);
}

/// Token + position embedding of element (n, c) of out (B*T, C): n = b*T + t; the token row
/// is `token` (negative: another tensor rank's row, which adds nothing), the position t = n % T
/// (no position term where `wpe` is null: a model without learned positions).
WHALE_HOST_DEVICE float embedding_element(const float* wte, const float* wpe, int token, size_t n,
                                          int c, int sequence, int channels) {
  const float token_value = token < 0 ? 0.0f : wte[static_cast<size_t>(token) * channels + c];
  if (wpe == nullptr) return token_value;
  const size_t t = n % static_cast<size_t>(sequence);
  return token_value + wpe[t * channels + c];
}

}  // namespace whale::exec::kmath

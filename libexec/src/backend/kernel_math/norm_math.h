// File: norm_math.h
// Layernorm (eps 1e-5, biased variance) and RMSNorm (eps 1e-5) element arithmetic, shared by the
// CUDA kernels (one warp per row, each lane over chunks of a 16-byte vector's columns,
// butterfly-combined), the CPU backend and the host tests.
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

constexpr double kLayernormEps = 1e-5;

/// The sum of term(c) over a lane's chunks of `width` consecutive columns, chunks lane,
/// lane + lanes, ... (chunk j holds columns j*width..j*width+width-1 < n), each chunk's columns in
/// order: one lane's share of a row reduction whose lanes load `width` elements at once.
template <class Term>
WHALE_HOST_DEVICE float lane_chunked_sum(int n, int lane, int lanes, int width, Term term) {
  float sum = 0.0f;
  for (int c0 = lane * width; c0 < n; c0 += lanes * width)
    for (int c = c0; c < c0 + width && c < n; ++c) sum += term(c);
  return sum;
}

/// The columns a norm kernel's lane loads at once: a 16-byte vector of elements of
/// `element_bytes` when the row length is a multiple of it and every row pointer is 16-byte
/// aligned (`aligned`), else 1 (scalar loads).
WHALE_HOST_DEVICE int norm_chunk_width(int channels, int element_bytes, bool aligned) {
  const int vector = 16 / element_bytes;
  return aligned && channels % vector == 0 ? vector : 1;
}

/// rstd = 1 / sqrt(var + eps), in double then rounded (one per row, as the CPU backend does).
WHALE_HOST_DEVICE float layernorm_rstd(float variance) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(variance) + kLayernormEps));
}

/// One output element: (x - mean) * rstd * weight + bias.
WHALE_HOST_DEVICE float layernorm_out(float x, float mean, float rstd, float weight, float bias) {
  return (x - mean) * rstd * weight + bias;
}

/// The normalised input (x - mean) * rstd, as forward computed it.
WHALE_HOST_DEVICE float layernorm_norm(float x, float mean, float rstd) { return (x - mean) * rstd; }

/// One input-gradient element given the row's mean of dnorm (= dout * weight) and of
/// dnorm * norm: (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd.
WHALE_HOST_DEVICE float layernorm_dinp(float dnorm, float norm, float dnorm_mean,
                                       float dnorm_norm_mean, float rstd) {
  return (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd;
}

/// RMSNorm's rstd = 1 / sqrt(mean(x^2) + eps), in double then rounded (one per row).
constexpr double kRmsnormEps = 1e-5;
WHALE_HOST_DEVICE float rmsnorm_rstd(float mean_square) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(mean_square) + kRmsnormEps));
}

/// One RMSNorm output element: x * rstd * weight.
WHALE_HOST_DEVICE float rmsnorm_out(float x, float rstd, float weight) { return x * rstd * weight; }

/// One RMSNorm input-gradient element given dnorm = dout * weight, the normalised input
/// norm = x * rstd and the row's mean of dnorm * norm: (dnorm - norm * mean(dnorm * norm)) * rstd.
WHALE_HOST_DEVICE float rmsnorm_dinp(float dnorm, float norm, float dnorm_norm_mean, float rstd) {
  return (dnorm - norm * dnorm_norm_mean) * rstd;
}

}  // namespace whale::exec::kmath

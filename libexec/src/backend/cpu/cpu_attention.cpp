// File: cpu_attention.cpp
// CPU causal attention (multi-head or grouped-query): per (sample, head) Eigen GEMMs on strided
// views of qkv, a masked row softmax in between (vectorised, address-independent); backward
// through the saved probabilities, per (sample, key/value head) over its query heads in order.
// Attention dropout: the saved probabilities stay undropped; the product with V (and the
// backward's with dout) takes them times the mask, regenerated from the mask's rows.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/kernel_math/attention_math.h"

namespace whale::exec::cpu {
namespace {

/// The strided views of one (sample, query head) inside qkv (B, T, (NH + 2*KV)*HS) and out
/// (B, T, NH*HS): its query columns, its key/value head's columns and its output columns.
struct HeadViews {
  std::size_t q, k, v, o;  // offsets of the head's first element
  int qkv_stride, out_stride;
};

HeadViews head_views(int b, int h, int sequence, int heads, int kv_heads, int head_size) {
  const int channels = heads * head_size, kv_channels = kv_heads * head_size;
  const int qkv_stride = channels + 2 * kv_channels;
  const std::size_t qkv_base = static_cast<std::size_t>(b) * sequence * qkv_stride;
  const std::size_t kv_col = static_cast<std::size_t>(kmath::kv_head_of(h, heads, kv_heads)) * head_size;
  return {qkv_base + static_cast<std::size_t>(h) * head_size,
          qkv_base + channels + kv_col,
          qkv_base + channels + kv_channels + kv_col,
          static_cast<std::size_t>(b) * sequence * channels + static_cast<std::size_t>(h) * head_size,
          qkv_stride,
          channels};
}

std::size_t probs_offset(int b, int h, int sequence, int heads) {
  return (static_cast<std::size_t>(b) * heads + h) * sequence * sequence;
}

/// Row i of the scores (T floats): softmax of scale * row[0..i] in place, zeros after i. The
/// exponentials run in `scratch` (aligned, at least round_up_to_packets(T) floats; see
/// kPacketFloats), so their bits do not depend on where the row lies.
void causal_softmax_row(float* row, int i, int T, float scale, float* scratch) {
  const std::size_t n = static_cast<std::size_t>(i) + 1;
  const float max_score = scale * *std::max_element(row, row + n);
  AlignedArrayMap s = padded_packets(row, n, scratch);
  s = (s * scale - max_score).exp();
  const double sum = ordered_sum<double>(n, [&](std::size_t j) { return double{scratch[j]}; });
  const float inv = static_cast<float>(1.0 / sum);
  for (std::size_t j = 0; j < n; ++j) row[j] = scratch[j] * inv;
  std::fill(row + n, row + T, 0.0f);
}

/// Row i of dP (T floats) becomes the score gradient scale * P (dP - sum_j P dP), zeros after i.
void causal_softmax_row_backward(float* dp, const float* p, int i, int T, float scale) {
  const std::size_t n = static_cast<std::size_t>(i) + 1;
  // In double, like the normalising sum: the key bias's true gradient is exactly zero (a shift
  // shared by all keys cancels), so rounding here is all it gets.
  const double dot =
      ordered_sum<double>(n, [&](std::size_t j) { return double{p[j]} * double{dp[j]}; });
  for (std::size_t j = 0; j < n; ++j) dp[j] = static_cast<float>(p[j] * (dp[j] - dot)) * scale;
  std::fill(dp + n, dp + T, 0.0f);
}

/// factors (T, T) = the dropout mask of (sample b, head h): 0 or 1 / (1 - p) on and below the
/// diagonal, 0 above it. Drawn once per (sample, head); the forward and the backward share it.
void dropout_factors(RowMatrix& factors, int T, const kmath::AttentionDropoutScalars& drop, int b,
                     int h) {
  factors.resize(T, T);
  const uint64_t head_row = kmath::attention_head_row(drop, b, h, T);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j)
      factors.data()[static_cast<std::size_t>(i) * T + j] =
          j <= i ? kmath::dropout_factor(drop.mask, head_row + i, j) : 0.0f;
}

}  // namespace

void Fp32Kernels::attention_forward(float* out, float* probs, const float* qkv, int batch,
                                    int sequence, int heads, int kv_heads, int head_size,
                                    const kmath::AttentionDropoutScalars& drop) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const int T = sequence;
  // (sample, head) pairs in parallel: each writes its own probabilities and output columns.
  pool_.parallel_for(static_cast<std::ptrdiff_t>(batch) * heads, [&](std::ptrdiff_t bh) {
    const int b = static_cast<int>(bh / heads), h = static_cast<int>(bh % heads);
    float* scratch = thread_aligned_scratch(round_up_to_packets(static_cast<std::size_t>(T)));
    const HeadViews hv = head_views(b, h, T, heads, kv_heads, head_size);
    ConstStridedMap Q(qkv + hv.q, T, head_size, Eigen::OuterStride<>(hv.qkv_stride));
    ConstStridedMap K(qkv + hv.k, T, head_size, Eigen::OuterStride<>(hv.qkv_stride));
    ConstStridedMap V(qkv + hv.v, T, head_size, Eigen::OuterStride<>(hv.qkv_stride));
    MatrixMap P(probs + probs_offset(b, h, T, heads), T, T);
    P.noalias() = Q * K.transpose();
    for (int i = 0; i < T; ++i)
      causal_softmax_row(P.data() + static_cast<std::size_t>(i) * T, i, T, scale, scratch);
    StridedMap O(out + hv.o, T, head_size, Eigen::OuterStride<>(hv.out_stride));
    if (!drop.mask.active) {
      O.noalias() = P * V;
      return;
    }
    thread_local RowMatrix factors, kept;
    dropout_factors(factors, T, drop, b, h);
    kept = P.cwiseProduct(factors);
    O.noalias() = kept * V;
  });
}

void Fp32Kernels::attention_backward(float* dqkv, const float* dout, const float* qkv,
                                     const float* probs, int batch, int sequence, int heads,
                                     int kv_heads, int head_size,
                                     const kmath::AttentionDropoutScalars& drop) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const int T = sequence, group = heads / kv_heads;
  // (sample, key/value head) pairs in parallel: each adds into its own columns of dqkv, its
  // query heads one after another (their key/value gradients sum in head order).
  pool_.parallel_for(static_cast<std::ptrdiff_t>(batch) * kv_heads, [&](std::ptrdiff_t bkv) {
    const int b = static_cast<int>(bkv / kv_heads), kv = static_cast<int>(bkv % kv_heads);
    thread_local RowMatrix dP, factors, kept;
    dP.resize(T, T);
    for (int h = kv * group; h < (kv + 1) * group; ++h) {
      const HeadViews hv = head_views(b, h, T, heads, kv_heads, head_size);
      const Eigen::OuterStride<> qkv_stride(hv.qkv_stride);
      ConstStridedMap Q(qkv + hv.q, T, head_size, qkv_stride);
      ConstStridedMap K(qkv + hv.k, T, head_size, qkv_stride);
      ConstStridedMap V(qkv + hv.v, T, head_size, qkv_stride);
      StridedMap dQ(dqkv + hv.q, T, head_size, qkv_stride);
      StridedMap dK(dqkv + hv.k, T, head_size, qkv_stride);
      StridedMap dV(dqkv + hv.v, T, head_size, qkv_stride);
      ConstStridedMap dO(dout + hv.o, T, head_size, Eigen::OuterStride<>(hv.out_stride));
      ConstMatrixMap P(probs + probs_offset(b, h, T, heads), T, T);
      dP.noalias() = dO * V.transpose();
      if (drop.mask.active) {  // through the mask: dV from the kept probabilities, dP times it
        dropout_factors(factors, T, drop, b, h);
        kept = P.cwiseProduct(factors);
        dV.noalias() += kept.transpose() * dO;
        dP.array() *= factors.array();
      } else {
        dV.noalias() += P.transpose() * dO;
      }
      // Softmax backward, row by row: dS = P * (dP - sum_j P dP), times the score scale.
      for (int i = 0; i < T; ++i)
        causal_softmax_row_backward(dP.data() + static_cast<std::size_t>(i) * T,
                                    P.data() + static_cast<std::size_t>(i) * T, i, T, scale);
      dQ.noalias() += dP * K;
      dK.noalias() += dP.transpose() * Q;
    }
  });
}

}  // namespace whale::exec::cpu

// File: cpu_attention.cpp
// CPU causal multi-head attention: per (sample, head) Eigen GEMMs on strided views of qkv,
// a masked row softmax in between; backward through the saved probabilities.
#include <cmath>
#include <vector>

#include "cpu_backend_impl.h"

namespace whale::exec::cpu {
namespace {

/// The strided views of one (sample, head) inside qkv (B, T, 3*C') and out (B, T, C').
struct HeadViews {
  std::size_t q, k, v, o;  // offsets of the head's first element
  int qkv_stride, out_stride;
};

HeadViews head_views(int b, int h, int sequence, int heads, int head_size) {
  const int channels = heads * head_size;
  const std::size_t qkv_base = static_cast<std::size_t>(b) * sequence * 3 * channels;
  const std::size_t col = static_cast<std::size_t>(h) * head_size;
  return {qkv_base + col, qkv_base + channels + col, qkv_base + 2 * channels + col,
          static_cast<std::size_t>(b) * sequence * channels + col, 3 * channels, channels};
}

std::size_t probs_offset(int b, int h, int sequence, int heads) {
  return (static_cast<std::size_t>(b) * heads + h) * sequence * sequence;
}

}  // namespace

void CpuBackend::attention_forward(float* out, float* probs, const float* qkv, int batch,
                                   int sequence, int heads, int head_size) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const int T = sequence;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const HeadViews hv = head_views(b, h, T, heads, head_size);
      ConstStridedMap Q(qkv + hv.q, T, head_size, Eigen::OuterStride<>(hv.qkv_stride));
      ConstStridedMap K(qkv + hv.k, T, head_size, Eigen::OuterStride<>(hv.qkv_stride));
      ConstStridedMap V(qkv + hv.v, T, head_size, Eigen::OuterStride<>(hv.qkv_stride));
      MatrixMap P(probs + probs_offset(b, h, T, heads), T, T);
      P.noalias() = Q * K.transpose();
      for (int i = 0; i < T; ++i) {
        float* row = P.data() + static_cast<std::size_t>(i) * T;
        float max_score = row[0] * scale;
        for (int j = 1; j <= i; ++j) max_score = std::max(max_score, row[j] * scale);
        double sum = 0.0;
        for (int j = 0; j <= i; ++j) {
          row[j] = std::exp(row[j] * scale - max_score);
          sum += row[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int j = 0; j <= i; ++j) row[j] *= inv;
        for (int j = i + 1; j < T; ++j) row[j] = 0.0f;
      }
      StridedMap O(out + hv.o, T, head_size, Eigen::OuterStride<>(hv.out_stride));
      O.noalias() = P * V;
    }
}

void CpuBackend::attention_backward(float* dqkv, const float* dout, const float* qkv,
                                    const float* probs, int batch, int sequence, int heads,
                                    int head_size) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const int T = sequence;
  RowMatrix dP(T, T);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const HeadViews hv = head_views(b, h, T, heads, head_size);
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
      dV.noalias() += P.transpose() * dO;
      // Softmax backward, row by row: dS = P * (dP - sum_j P dP), times the score scale.
      for (int i = 0; i < T; ++i) {
        double dot = 0.0;
        for (int j = 0; j <= i; ++j) dot += static_cast<double>(P(i, j)) * dP(i, j);
        for (int j = 0; j <= i; ++j)
          dP(i, j) = static_cast<float>(P(i, j) * (dP(i, j) - dot)) * scale;
        for (int j = i + 1; j < T; ++j) dP(i, j) = 0.0f;
      }
      dQ.noalias() += dP * K;
      dK.noalias() += dP.transpose() * Q;
    }
}

}  // namespace whale::exec::cpu

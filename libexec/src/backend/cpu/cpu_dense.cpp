// File: cpu_dense.cpp
// CPU dense algebra: GEMM (Eigen on mapped buffers), linear layers, bias and residual adds.
#include <algorithm>
#include <cstddef>

#include "backend/cpu/cpu_backend_impl.h"

namespace whale::exec::cpu {

void Fp32Kernels::add_column_sums(float* dst, const float* src, int rows, int channels) {
  constexpr int kBlock = 64;  // columns per parallel iteration
  pool_.parallel_for((channels + kBlock - 1) / kBlock, [&](std::ptrdiff_t block) {
    const int begin = static_cast<int>(block) * kBlock, end = std::min(channels, begin + kBlock);
    double sums[kBlock] = {};
    for (int r = 0; r < rows; ++r) {
      const float* row = src + static_cast<std::size_t>(r) * channels;
      for (int c = begin; c < end; ++c) sums[c - begin] += row[c];
    }
    for (int c = begin; c < end; ++c) dst[c] += static_cast<float>(sums[c - begin]);
  });
}

namespace {
template <class A, class B>
void gemm_into(MatrixMap& c, const A& a, const B& b, bool accumulate) {
  if (accumulate)
    c.noalias() += a * b;
  else
    c.noalias() = a * b;
}
}  // namespace

void Fp32Kernels::matmul(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                         const float* b, float* c, bool accumulate) {
  // Panels of kMatmulPanelRows rows of C in parallel, each one single-threaded Eigen GEMM (no
  // OpenMP: Eigen's own threading is off). The panels are the same for any thread count, so
  // the bits are too; a panel is a whole number of Eigen's register blocks (3 packets of 8 or
  // 16 floats), so a row meets the same micro-kernel as in one GEMM over all rows
  // (test_ops_threads.cpp checks both).
  ConstMatrixMap A(a, trans_a ? k : m, trans_a ? m : k);
  ConstMatrixMap B(b, trans_b ? n : k, trans_b ? k : n);
  pool_.parallel_for((m + kMatmulPanelRows - 1) / kMatmulPanelRows, [&](std::ptrdiff_t panel) {
    const int first = static_cast<int>(panel) * kMatmulPanelRows;
    const int rows = std::min(kMatmulPanelRows, m - first);
    MatrixMap C(c + static_cast<std::size_t>(first) * n, rows, n);
    if (trans_a && trans_b)
      gemm_into(C, A.middleCols(first, rows).transpose(), B.transpose(), accumulate);
    else if (trans_a)
      gemm_into(C, A.middleCols(first, rows).transpose(), B, accumulate);
    else if (trans_b)
      gemm_into(C, A.middleRows(first, rows), B.transpose(), accumulate);
    else
      gemm_into(C, A.middleRows(first, rows), B, accumulate);
  });
}

void Fp32Kernels::linear_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int rows, int in_channels, int out_channels) {
  matmul(false, true, rows, out_channels, in_channels, inp, weight, out, false);
  if (bias) bias_add_forward(out, bias, rows, out_channels);
}

void Fp32Kernels::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int rows, int in_channels,
                                  int out_channels) {
  if (dinp) matmul(false, false, rows, in_channels, out_channels, dout, weight, dinp, true);
  matmul(true, false, out_channels, in_channels, rows, dout, inp, dweight, true);
  if (dbias) add_column_sums(dbias, dout, rows, out_channels);
}

void Fp32Kernels::bias_add_forward(float* out, const float* bias, int rows, int channels) {
  MatrixMap(out, rows, channels).rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, channels);
}

void Fp32Kernels::bias_add_backward(float* dbias, const float* dout, int rows, int channels) {
  add_column_sums(dbias, dout, rows, channels);
}

void Fp32Kernels::add_forward(float* out, const float* a, const float* b, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

void Fp32Kernels::add_backward(float* da, float* db, const float* dout, std::size_t count) {
  for (float* d : {da, db})
    if (d)
      for (std::size_t i = 0; i < count; ++i) d[i] += dout[i];
}

}  // namespace whale::exec::cpu

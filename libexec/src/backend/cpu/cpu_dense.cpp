// File: cpu_dense.cpp
// CPU dense algebra: GEMM (Eigen on mapped buffers), linear layers, bias and residual adds.
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"

namespace whale::exec::cpu {

void add_column_sums(float* dst, const float* src, int rows, int channels) {
  std::vector<double> sums(channels, 0.0);
  for (int r = 0; r < rows; ++r) {
    const float* row = src + static_cast<std::size_t>(r) * channels;
    for (int c = 0; c < channels; ++c) sums[c] += row[c];
  }
  for (int c = 0; c < channels; ++c) dst[c] += static_cast<float>(sums[c]);
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
  ConstMatrixMap A(a, trans_a ? k : m, trans_a ? m : k);
  ConstMatrixMap B(b, trans_b ? n : k, trans_b ? k : n);
  MatrixMap C(c, m, n);
  if (trans_a && trans_b)
    gemm_into(C, A.transpose(), B.transpose(), accumulate);
  else if (trans_a)
    gemm_into(C, A.transpose(), B, accumulate);
  else if (trans_b)
    gemm_into(C, A, B.transpose(), accumulate);
  else
    gemm_into(C, A, B, accumulate);
}

void Fp32Kernels::linear_forward(float* out, const float* inp, const float* weight,
                                const float* bias, int rows, int in_channels,
                                int out_channels) {
  matmul(false, true, rows, out_channels, in_channels, inp, weight, out, false);
  if (bias) bias_add_forward(out, bias, rows, out_channels);
}

void Fp32Kernels::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                 const float* inp, const float* weight, int rows,
                                 int in_channels, int out_channels) {
  if (dinp) matmul(false, false, rows, in_channels, out_channels, dout, weight, dinp, true);
  matmul(true, false, out_channels, in_channels, rows, dout, inp, dweight, true);
  if (dbias) add_column_sums(dbias, dout, rows, out_channels);
}

void Fp32Kernels::bias_add_forward(float* out, const float* bias, int rows, int channels) {
  MatrixMap(out, rows, channels).rowwise() +=
      Eigen::Map<const Eigen::RowVectorXf>(bias, channels);
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

// File: cpu_norm_activation.cpp
// CPU layernorm, RMSNorm, GELU (tanh approximation) and SwiGLU, forward and backward; the
// RMSNorm and SwiGLU element arithmetic is kmath's (shared with the CUDA kernels).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/kernel_math/elementwise_math.h"
#include "backend/kernel_math/norm_math.h"

namespace whale::exec::cpu {
namespace {
constexpr double kLayernormEps = 1e-5;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
}  // namespace

// Layernorm: row statistics are float ordered_sums (vectorised, address-independent; a row is
// at most a few thousand channels); rstd's square root and the per-channel parameter gradients,
// summed over all rows, are in double.
void Fp32Kernels::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int rows,
                                    int channels) {
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {  // rows are independent
    const float* x = inp + static_cast<std::size_t>(r) * channels;
    float* y = out + static_cast<std::size_t>(r) * channels;
    const float mu =
        ordered_sum(channels, [&](std::size_t c) { return x[c]; }) / static_cast<float>(channels);
    const float variance =
        ordered_sum(channels, [&](std::size_t c) { return (x[c] - mu) * (x[c] - mu); }) /
        static_cast<float>(channels);
    const float s =
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(variance) + kLayernormEps));
    for (int c = 0; c < channels; ++c) y[c] = (x[c] - mu) * s * weight[c] + bias[c];
    mean[r] = mu;
    rstd[r] = s;
  });
}

void Fp32Kernels::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int rows, int channels) {
  // The input gradient row by row in parallel; the parameter gradients column by column in
  // parallel, each summing its rows in order (the same bits as one pass).
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {
    thread_local std::vector<float> norm, dnorm;
    norm.resize(channels);
    dnorm.resize(channels);
    const std::size_t base = static_cast<std::size_t>(r) * channels;
    const float* x = inp + base;
    const float* dy = dout + base;
    for (int c = 0; c < channels; ++c) {
      norm[c] = (x[c] - mean[r]) * rstd[r];
      dnorm[c] = dy[c] * weight[c];
    }
    const float dnorm_mean = ordered_sum(channels, [&](std::size_t c) { return dnorm[c]; }) /
                             static_cast<float>(channels);
    const float dnorm_norm_mean =
        ordered_sum(channels, [&](std::size_t c) { return dnorm[c] * norm[c]; }) /
        static_cast<float>(channels);
    for (int c = 0; c < channels; ++c)
      dinp[base + c] += (dnorm[c] - dnorm_mean - norm[c] * dnorm_norm_mean) * rstd[r];
  });
  pool_.parallel_for(channels, [&](std::ptrdiff_t c) {
    double dweight_sum = 0.0, dbias_sum = 0.0;
    for (int r = 0; r < rows; ++r) {
      const std::size_t at = static_cast<std::size_t>(r) * channels + c;
      const float norm = (inp[at] - mean[r]) * rstd[r];
      dweight_sum += static_cast<double>(norm * dout[at]);
      dbias_sum += static_cast<double>(dout[at]);
    }
    dweight[c] += static_cast<float>(dweight_sum);
    dbias[c] += static_cast<float>(dbias_sum);
  });
}

namespace {
constexpr std::size_t kGeluChunk = 1024;  // floats, a whole number of packets

/// Calls op(x, t, begin, n) per chunk of inp: x holds inp[begin, begin + n) zero-padded to
/// whole packets and t = tanh(sqrt(2/pi) (x + 0.044715 x^3)), both aligned scratch (see
/// kPacketFloats: the values do not depend on where inp lies).
template <class Op>
void for_gelu_chunks(WorkerPool& pool, const float* inp, std::size_t count, Op op) {
  const auto chunks = static_cast<std::ptrdiff_t>((count + kGeluChunk - 1) / kGeluChunk);
  pool.parallel_for(chunks, [&](std::ptrdiff_t chunk) {  // chunks are independent
    alignas(64) float x_buffer[kGeluChunk];
    alignas(64) float t_buffer[kGeluChunk];
    const std::size_t begin = static_cast<std::size_t>(chunk) * kGeluChunk;
    const std::size_t n = std::min(kGeluChunk, count - begin);
    AlignedArrayMap x = padded_packets(inp + begin, n, x_buffer);
    AlignedArrayMap t(t_buffer, x.size());
    t = (kGeluScale * (x + kGeluCubic * x.cube())).tanh();
    op(x, t, begin, n);
  });
}
}  // namespace

void Fp32Kernels::gelu_forward(float* out, const float* inp, std::size_t count) {
  for_gelu_chunks(pool_, inp, count,
                  [&](AlignedArrayMap& x, AlignedArrayMap& t, std::size_t begin, std::size_t n) {
                    t = 0.5f * x * (1.0f + t);
                    std::copy(t.data(), t.data() + n, out + begin);
                  });
}

void Fp32Kernels::gelu_backward(float* dinp, const float* inp, const float* dout,
                                std::size_t count) {
  for_gelu_chunks(pool_, inp, count,
                  [&](AlignedArrayMap& x, AlignedArrayMap& t, std::size_t begin, std::size_t n) {
                    // t becomes d GELU / dx.
                    t = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t.square()) * kGeluScale *
                                                (1.0f + 3.0f * kGeluCubic * x.square());
                    for (std::size_t i = 0; i < n; ++i)
                      dinp[begin + i] += t.data()[i] * dout[begin + i];
                  });
}

// RMSNorm: the row's mean square is a float ordered_sum; the weight gradient sums its rows in
// double, column by column.
void Fp32Kernels::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                  int rows, int channels) {
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {  // rows are independent
    const float* x = inp + static_cast<std::size_t>(r) * channels;
    float* y = out + static_cast<std::size_t>(r) * channels;
    const float mean_square = ordered_sum(channels, [&](std::size_t c) { return x[c] * x[c]; }) /
                              static_cast<float>(channels);
    const float s = kmath::rmsnorm_rstd(mean_square);
    for (int c = 0; c < channels; ++c) y[c] = kmath::rmsnorm_out(x[c], s, weight[c]);
    rstd[r] = s;
  });
}

void Fp32Kernels::rmsnorm_backward(float* dinp, float* dweight, const float* dout,
                                   const float* inp, const float* weight, const float* rstd,
                                   int rows, int channels) {
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {
    const std::size_t base = static_cast<std::size_t>(r) * channels;
    const float* x = inp + base;
    const float* dy = dout + base;
    const float s = rstd[r];
    const float dnorm_norm_mean =
        ordered_sum(channels, [&](std::size_t c) { return dy[c] * weight[c] * (x[c] * s); }) /
        static_cast<float>(channels);
    for (int c = 0; c < channels; ++c)
      dinp[base + c] += kmath::rmsnorm_dinp(dy[c] * weight[c], x[c] * s, dnorm_norm_mean, s);
  });
  pool_.parallel_for(channels, [&](std::ptrdiff_t c) {
    const auto at = [&](int r) { return static_cast<std::size_t>(r) * channels + c; };
    dweight[c] += kmath::ordered_row_sum(rows, [&](int r) {
      return static_cast<double>(inp[at(r)] * rstd[r] * dout[at(r)]);
    });
  });
}

namespace {
constexpr std::size_t kSwigluChunk = 4096;  // elements per parallel task

/// Calls op(i) for every i < count, chunks in parallel.
template <class Op>
void for_each_element(WorkerPool& pool, std::size_t count, Op op) {
  const auto chunks = static_cast<std::ptrdiff_t>((count + kSwigluChunk - 1) / kSwigluChunk);
  pool.parallel_for(chunks, [&](std::ptrdiff_t chunk) {
    const std::size_t begin = static_cast<std::size_t>(chunk) * kSwigluChunk;
    const std::size_t end = std::min(count, begin + kSwigluChunk);
    for (std::size_t i = begin; i < end; ++i) op(i);
  });
}
}  // namespace

void Fp32Kernels::swiglu_forward(float* out, const float* gate, const float* up,
                                 std::size_t count) {
  for_each_element(pool_, count, [&](std::size_t i) { out[i] = kmath::swiglu_forward(gate[i], up[i]); });
}

void Fp32Kernels::swiglu_backward(float* dgate, float* dup, const float* gate, const float* up,
                                  const float* dout, std::size_t count) {
  for_each_element(pool_, count, [&](std::size_t i) {
    const kmath::SwigluGrad g = kmath::swiglu_backward(gate[i], up[i], dout[i]);
    dgate[i] += g.dgate;
    dup[i] += g.dup;
  });
}

}  // namespace whale::exec::cpu

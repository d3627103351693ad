// File: cuda_norm_kernels.cu
// Layernorm and RMSNorm CUDA kernels: one warp per row, each lane over chunks of one 16-byte
// vector of columns (kmath::lane_chunked_sum's order, butterfly-combined); the weight
// (and bias) gradients by the parallel column sum (cuda_column_sum.cuh: double partials over
// row chunks, a fixed order, no atomics).
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_chunk.h"
#include "backend/cuda/cuda_column_sum.cuh"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_warp.h"
#include "backend/kernel_math/elementwise_math.h"
#include "backend/kernel_math/launch_geometry.h"
#include "backend/kernel_math/norm_math.h"

namespace whale::exec::cuda {
namespace {
using kmath::kWarpSize;

__device__ __forceinline__ int warp_row() {
  return static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / kWarpSize);
}

/// Calls body(c0) for each of this lane's chunks of W consecutive columns of a row of n: chunks
/// lane, lane + 32, ... in order (kmath::lane_chunked_sum's order; n is a multiple of W).
template <int W, class Body>
__device__ __forceinline__ void for_lane_chunks(int n, Body body) {
  for (int c0 = static_cast<int>(threadIdx.x % kWarpSize) * W; c0 < n; c0 += kWarpSize * W) body(c0);
}

/// Calls term(dnorm, x) with dnorm = dout * weight and x = inp for each column of this lane's
/// chunks of a row, in order: the row sums of a norm's input gradient.
template <int W, class T, class Term>
__device__ __forceinline__ void for_lane_dnorm(int channels, const T* dout, const T* inp,
                                               const T* weight, Term term) {
  for_lane_chunks<W>(channels, [&](int c0) {
    float dy[W], x[W], w[W];
    load_chunk<W>(dy, dout + c0);
    load_chunk<W>(x, inp + c0);
    load_chunk<W>(w, weight + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) term(dy[j] * w[j], x[j]);
  });
}

/// dinp += gradient(dnorm, x) over this lane's chunks of a row (dnorm = dout * weight, x = inp).
template <int W, class T, class Gradient>
__device__ __forceinline__ void add_lane_input_gradient(int channels, T* dinp, const T* dout,
                                                        const T* inp, const T* weight,
                                                        Gradient gradient) {
  for_lane_chunks<W>(channels, [&](int c0) {
    float dy[W], x[W], w[W], d[W];
    load_chunk<W>(dy, dout + c0);
    load_chunk<W>(x, inp + c0);
    load_chunk<W>(w, weight + c0);
    load_chunk<W>(d, dinp + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) d[j] += gradient(dy[j] * w[j], x[j]);
    store_chunk<W>(dinp + c0, d);
  });
}

template <class T, int W>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp,
                                         const T* weight, const T* bias, int rows, int channels) {
  const int r = warp_row();
  if (r >= rows) return;  // whole warps leave together
  const T* x = inp + static_cast<std::size_t>(r) * channels;
  float sum = 0.0f;
  for_lane_chunks<W>(channels, [&](int c0) {
    float v[W];
    load_chunk<W>(v, x + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) sum += v[j];
  });
  const float mu = warp_sum(sum) / static_cast<float>(channels);
  float squares = 0.0f;
  for_lane_chunks<W>(channels, [&](int c0) {
    float v[W];
    load_chunk<W>(v, x + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) squares += (v[j] - mu) * (v[j] - mu);
  });
  const float s = kmath::layernorm_rstd(warp_sum(squares) / static_cast<float>(channels));
  T* y = out + static_cast<std::size_t>(r) * channels;
  for_lane_chunks<W>(channels, [&](int c0) {
    float v[W], w[W], b[W];
    load_chunk<W>(v, x + c0);
    load_chunk<W>(w, weight + c0);
    load_chunk<W>(b, bias + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) v[j] = kmath::layernorm_out(v[j], mu, s, w[j], b[j]);
    store_chunk<W>(y + c0, v);
  });
  if (threadIdx.x % kWarpSize == 0) {
    mean[r] = mu;
    rstd[r] = s;
  }
}

/// dinp += the layernorm input gradient; both row means in one pass over dout, inp and weight.
template <class T, int W>
__global__ void layernorm_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                      const float* mean, const float* rstd, int rows, int channels) {
  const int r = warp_row();
  if (r >= rows) return;
  const std::size_t base = static_cast<std::size_t>(r) * channels;
  const float mu = mean[r], s = rstd[r];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for_lane_dnorm<W>(channels, dout + base, inp + base, weight, [&](float dnorm, float x) {
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * kmath::layernorm_norm(x, mu, s);
  });
  const float dnorm_mean = warp_sum(dnorm_sum) / static_cast<float>(channels);
  const float dnorm_norm_mean = warp_sum(dnorm_norm_sum) / static_cast<float>(channels);
  add_lane_input_gradient<W>(channels, dinp + base, dout + base, inp + base, weight,
                             [&](float dnorm, float x) {
                               return kmath::layernorm_dinp(dnorm, kmath::layernorm_norm(x, mu, s),
                                                            dnorm_mean, dnorm_norm_mean, s);
                             });
}

template <class T, int W>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* weight, int rows,
                                       int channels) {
  const int r = warp_row();
  if (r >= rows) return;  // whole warps leave together
  const T* x = inp + static_cast<std::size_t>(r) * channels;
  float squares = 0.0f;
  for_lane_chunks<W>(channels, [&](int c0) {
    float v[W];
    load_chunk<W>(v, x + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) squares += v[j] * v[j];
  });
  const float s = kmath::rmsnorm_rstd(warp_sum(squares) / static_cast<float>(channels));
  T* y = out + static_cast<std::size_t>(r) * channels;
  for_lane_chunks<W>(channels, [&](int c0) {
    float v[W], w[W];
    load_chunk<W>(v, x + c0);
    load_chunk<W>(w, weight + c0);
#pragma unroll
    for (int j = 0; j < W; ++j) v[j] = kmath::rmsnorm_out(v[j], s, w[j]);
    store_chunk<W>(y + c0, v);
  });
  if (threadIdx.x % kWarpSize == 0) rstd[r] = s;
}

template <class T, int W>
__global__ void rmsnorm_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                    const float* rstd, int rows, int channels) {
  const int r = warp_row();
  if (r >= rows) return;
  const std::size_t base = static_cast<std::size_t>(r) * channels;
  const float s = rstd[r];
  float dnorm_norm_sum = 0.0f;
  for_lane_dnorm<W>(channels, dout + base, inp + base, weight,
                    [&](float dnorm, float x) { dnorm_norm_sum += dnorm * (x * s); });
  const float dnorm_norm_mean = warp_sum(dnorm_norm_sum) / static_cast<float>(channels);
  add_lane_input_gradient<W>(channels, dinp + base, dout + base, inp + base, weight,
                             [&](float dnorm, float x) {
                               return kmath::rmsnorm_dinp(dnorm, x * s, dnorm_norm_mean, s);
                             });
}

/// Launches kernel<W> with W = kmath::norm_chunk_width (a 16-byte vector of T, or 1).
template <class T, class Launch>
void with_chunk_width(int channels, bool aligned, Launch launch) {
  constexpr int vector = static_cast<int>(16 / sizeof(T));
  if (kmath::norm_chunk_width(channels, static_cast<int>(sizeof(T)), aligned) == vector)
    launch(std::integral_constant<int, vector>{});
  else
    launch(std::integral_constant<int, 1>{});
}

}  // namespace

template <class T>
void rmsnorm_forward(cudaStream_t stream, T* out, float* rstd, const T* inp, const T* weight,
                     int rows, int channels) {
  const kmath::Launch l = kmath::warp_per_row_launch(rows);
  if (l.grid_x == 0) return;
  with_chunk_width<T>(channels, all_aligned16(out, inp, weight), [&](auto w) {
    rmsnorm_forward_kernel<T, decltype(w)::value><<<l.grid_x, l.block, 0, stream>>>(out, rstd, inp, weight, rows, channels);
  });
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void rmsnorm_backward(cudaStream_t stream, T* dinp, float* dweight, const T* dout, const T* inp,
                      const T* weight, const float* rstd, int rows, int channels,
                      double* partials) {
  const kmath::Launch rows_launch = kmath::warp_per_row_launch(rows);
  if (rows_launch.grid_x == 0 || channels <= 0) return;
  with_chunk_width<T>(channels, all_aligned16(dinp, dout, inp, weight), [&](auto w) {
    rmsnorm_dinp_kernel<T, decltype(w)::value><<<rows_launch.grid_x, rows_launch.block, 0, stream>>>(
        dinp, dout, inp, weight, rstd, rows, channels);
  });
  WHALE_CUDA_CHECK_LAUNCH();
  column_sum(stream, dweight, partials, rows, channels, [=] __device__(int r, int c) {
    const std::size_t at = static_cast<std::size_t>(r) * channels + c;
    return static_cast<double>(to_float(inp[at]) * rstd[r] * to_float(dout[at]));
  });
}

template <class T>
void layernorm_forward(cudaStream_t stream, T* out, float* mean, float* rstd, const T* inp,
                       const T* weight, const T* bias, int rows, int channels) {
  const kmath::Launch l = kmath::warp_per_row_launch(rows);
  if (l.grid_x == 0) return;
  with_chunk_width<T>(channels, all_aligned16(out, inp, weight, bias), [&](auto w) {
    layernorm_forward_kernel<T, decltype(w)::value><<<l.grid_x, l.block, 0, stream>>>(out, mean, rstd, inp, weight,
                                                                       bias, rows, channels);
  });
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void layernorm_backward(cudaStream_t stream, T* dinp, float* dweight, float* dbias, const T* dout,
                        const T* inp, const T* weight, const float* mean, const float* rstd,
                        int rows, int channels, double* partials) {
  const kmath::Launch rows_launch = kmath::warp_per_row_launch(rows);
  if (rows_launch.grid_x == 0 || channels <= 0) return;
  with_chunk_width<T>(channels, all_aligned16(dinp, dout, inp, weight), [&](auto w) {
    layernorm_dinp_kernel<T, decltype(w)::value><<<rows_launch.grid_x, rows_launch.block, 0, stream>>>(
        dinp, dout, inp, weight, mean, rstd, rows, channels);
  });
  WHALE_CUDA_CHECK_LAUNCH();
  column_sum(stream, dweight, partials, rows, channels, [=] __device__(int r, int c) {
    const std::size_t at = static_cast<std::size_t>(r) * channels + c;
    return static_cast<double>(kmath::layernorm_norm(to_float(inp[at]), mean[r], rstd[r]) *
                               to_float(dout[at]));
  });
  // The partials are reused: both sums run on the same stream, in order.
  column_sum(stream, dbias, partials, rows, channels, [=] __device__(int r, int c) {
    return static_cast<double>(to_float(dout[static_cast<std::size_t>(r) * channels + c]));
  });
}

#define WHALE_INSTANTIATE_NORM(T)                                                               \
  template void layernorm_forward<T>(cudaStream_t, T*, float*, float*, const T*, const T*,     \
                                     const T*, int, int);                                      \
  template void layernorm_backward<T>(cudaStream_t, T*, float*, float*, const T*, const T*, const T*, \
                                      const float*, const float*, int, int, double*);       \
  template void rmsnorm_forward<T>(cudaStream_t, T*, float*, const T*, const T*, int, int);      \
  template void rmsnorm_backward<T>(cudaStream_t, T*, float*, const T*, const T*, const T*,     \
                                    const float*, int, int, double*);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_NORM)

}  // namespace whale::exec::cuda

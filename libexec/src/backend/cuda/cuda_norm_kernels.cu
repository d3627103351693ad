// File: cuda_norm_kernels.cu
// Layernorm and RMSNorm CUDA kernels: one warp per row (lane-strided sums, butterfly); the weight
// (and bias) gradients by the parallel column sum (cuda_column_sum.cuh: double partials over
// row chunks, a fixed order, no atomics).
#include "backend/cuda/cuda_check.h"
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

/// A warp's sum of term over a row of n (the twin of the host tests' warp_row_sum).
template <class Term>
__device__ float warp_row_sum(int n, Term term) {
  return warp_sum(kmath::lane_strided_sum(n, static_cast<int>(threadIdx.x % kWarpSize), kWarpSize, term));
}

template <class T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp,
                                         const T* weight, const T* bias, int rows, int channels) {
  const int r = warp_row();
  if (r >= rows) return;  // whole warps leave together
  const T* x = inp + static_cast<std::size_t>(r) * channels;
  const float mu = warp_row_sum(channels, [&](int c) { return to_float(x[c]); }) /
                   static_cast<float>(channels);
  const float var = warp_row_sum(channels, [&](int c) {
                      const float d = to_float(x[c]) - mu;
                      return d * d;
                    }) /
                    static_cast<float>(channels);
  const float s = kmath::layernorm_rstd(var);
  T* y = out + static_cast<std::size_t>(r) * channels;
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  for (int c = lane; c < channels; c += kWarpSize)
    y[c] = from_float<T>(kmath::layernorm_out(to_float(x[c]), mu, s, to_float(weight[c]), to_float(bias[c])));
  if (lane == 0) {
    mean[r] = mu;
    rstd[r] = s;
  }
}

template <class T>
__global__ void layernorm_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                      const float* mean, const float* rstd, int rows, int channels) {
  const int r = warp_row();
  if (r >= rows) return;
  const std::size_t base = static_cast<std::size_t>(r) * channels;
  const float mu = mean[r], s = rstd[r];
  const float dnorm_mean =
      warp_row_sum(channels, [&](int c) { return to_float(dout[base + c]) * to_float(weight[c]); }) /
      static_cast<float>(channels);
  const float dnorm_norm_mean = warp_row_sum(channels, [&](int c) {
                                  return to_float(dout[base + c]) * to_float(weight[c]) *
                                         kmath::layernorm_norm(to_float(inp[base + c]), mu, s);
                                }) /
                                static_cast<float>(channels);
  for (int c = static_cast<int>(threadIdx.x % kWarpSize); c < channels; c += kWarpSize)
    dinp[base + c] = from_float<T>(
        to_float(dinp[base + c]) +
        kmath::layernorm_dinp(to_float(dout[base + c]) * to_float(weight[c]),
                              kmath::layernorm_norm(to_float(inp[base + c]), mu, s), dnorm_mean,
                              dnorm_norm_mean, s));
}

template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* weight, int rows,
                                       int channels) {
  const int r = warp_row();
  if (r >= rows) return;  // whole warps leave together
  const T* x = inp + static_cast<std::size_t>(r) * channels;
  const float mean_square = warp_row_sum(channels, [&](int c) {
                              const float v = to_float(x[c]);
                              return v * v;
                            }) /
                            static_cast<float>(channels);
  const float s = kmath::rmsnorm_rstd(mean_square);
  T* y = out + static_cast<std::size_t>(r) * channels;
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  for (int c = lane; c < channels; c += kWarpSize)
    y[c] = from_float<T>(kmath::rmsnorm_out(to_float(x[c]), s, to_float(weight[c])));
  if (lane == 0) rstd[r] = s;
}

template <class T>
__global__ void rmsnorm_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                    const float* rstd, int rows, int channels) {
  const int r = warp_row();
  if (r >= rows) return;
  const std::size_t base = static_cast<std::size_t>(r) * channels;
  const float s = rstd[r];
  const float dnorm_norm_mean = warp_row_sum(channels, [&](int c) {
                                  return to_float(dout[base + c]) * to_float(weight[c]) *
                                         (to_float(inp[base + c]) * s);
                                }) /
                                static_cast<float>(channels);
  for (int c = static_cast<int>(threadIdx.x % kWarpSize); c < channels; c += kWarpSize)
    dinp[base + c] = from_float<T>(
        to_float(dinp[base + c]) +
        kmath::rmsnorm_dinp(to_float(dout[base + c]) * to_float(weight[c]),
                            to_float(inp[base + c]) * s, dnorm_norm_mean, s));
}

}  // namespace

template <class T>
void rmsnorm_forward(cudaStream_t stream, T* out, float* rstd, const T* inp, const T* weight,
                     int rows, int channels) {
  const kmath::Launch l = kmath::warp_per_row_launch(rows);
  if (l.grid_x == 0) return;
  rmsnorm_forward_kernel<<<l.grid_x, l.block, 0, stream>>>(out, rstd, inp, weight, rows, channels);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void rmsnorm_backward(cudaStream_t stream, T* dinp, float* dweight, const T* dout, const T* inp,
                      const T* weight, const float* rstd, int rows, int channels,
                      double* partials) {
  const kmath::Launch rows_launch = kmath::warp_per_row_launch(rows);
  if (rows_launch.grid_x == 0 || channels <= 0) return;
  rmsnorm_dinp_kernel<<<rows_launch.grid_x, rows_launch.block, 0, stream>>>(
      dinp, dout, inp, weight, rstd, rows, channels);
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
  layernorm_forward_kernel<<<l.grid_x, l.block, 0, stream>>>(out, mean, rstd, inp, weight, bias,
                                                             rows, channels);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void layernorm_backward(cudaStream_t stream, T* dinp, float* dweight, float* dbias, const T* dout,
                        const T* inp, const T* weight, const float* mean, const float* rstd,
                        int rows, int channels, double* partials) {
  const kmath::Launch rows_launch = kmath::warp_per_row_launch(rows);
  if (rows_launch.grid_x == 0 || channels <= 0) return;
  layernorm_dinp_kernel<<<rows_launch.grid_x, rows_launch.block, 0, stream>>>(
      dinp, dout, inp, weight, mean, rstd, rows, channels);
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

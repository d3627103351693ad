// File: cuda_elementwise.h
// Private to the .cu files: launch_elementwise, op(i) for every i < count over one grid-stride
// launch of kmath::elementwise_launch's geometry, checked; launch_map, out[i] = f(in[i]...) in
// chunks of 16-byte vectors where the pointers allow. `op` and `f` are __device__ lambdas.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_chunk.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {

/// Runs op(i) for every i < count over a grid-stride launch.
template <class Op>
__global__ void elementwise_kernel(std::size_t count, Op op) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    op(i);
}

template <class Op>
void launch_elementwise(cudaStream_t stream, std::size_t count, Op op) {
  const kmath::Launch l = kmath::elementwise_launch(count);
  if (l.grid_x == 0) return;
  elementwise_kernel<<<l.grid_x, l.block, 0, stream>>>(count, op);
  WHALE_CUDA_CHECK_LAUNCH();
}

/// f(v[0][j], v[1][j], ...) for the inputs' loaded chunks v.
template <class F, int W, std::size_t... K>
__device__ __forceinline__ float apply_at(F& f, const float (&v)[sizeof...(K)][W], int j,
                                          std::index_sequence<K...>) {
  return f(v[K][j]...);
}

/// out[i] = f(in[i]...) for every element of `chunks` chunks of W: each input's chunk loaded
/// whole, f applied element by element in order, the output's chunk stored whole.
template <int W, class TOut, class F, class... TIn>
__global__ void map_kernel(std::size_t chunks, F f, TOut* out, const TIn*... in) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += stride) {
    const std::size_t i0 = c * W;
    float v[sizeof...(TIn)][W];
    int k = 0;
    (load_chunk<W>(v[k++], in + i0), ...);
    float r[W];
#pragma unroll
    for (int j = 0; j < W; ++j) r[j] = apply_at(f, v, j, std::index_sequence_for<TIn...>{});
    store_chunk<W>(out + i0, r);
  }
}

/// out[i] = f(in[i]...) for i < count (f takes and returns floats; `out` may be one of the
/// inputs). Chunks of W = 16 / the smallest element size when count is a multiple of W and
/// every pointer is 16-byte aligned, else one element a thread.
template <class TOut, class F, class... TIn>
void launch_map(cudaStream_t stream, std::size_t count, F f, TOut* out, const TIn*... in) {
  constexpr std::size_t smallest = std::min({sizeof(TOut), sizeof(TIn)...});
  constexpr int W = static_cast<int>(16 / smallest);
  const bool chunked = count % W == 0 && all_aligned16(out, in...);
  const std::size_t chunks = chunked ? count / W : count;
  const kmath::Launch l = kmath::elementwise_launch(chunks);
  if (l.grid_x == 0) return;
  if (chunked)
    map_kernel<W><<<l.grid_x, l.block, 0, stream>>>(chunks, f, out, in...);
  else
    map_kernel<1><<<l.grid_x, l.block, 0, stream>>>(chunks, f, out, in...);
  WHALE_CUDA_CHECK_LAUNCH();
}

}  // namespace whale::exec::cuda

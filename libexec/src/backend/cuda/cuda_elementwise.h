// File: cuda_elementwise.h
// Private to the .cu files: launch_elementwise, op(i) for every i < count over one grid-stride
// launch of kmath::elementwise_launch's geometry, checked. `op` is a __device__ lambda.
#pragma once

#include "backend/cuda/cuda_check.h"
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

}  // namespace whale::exec::cuda

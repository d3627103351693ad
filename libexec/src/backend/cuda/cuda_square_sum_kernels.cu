// File: cuda_square_sum_kernels.cu
// The sum of squares over many fp32 tensors in one launch: one block per chunk of the chunk list
// (gpu::adamw_chunks), each thread summing its strided elements in double, then the block's
// threads by a fixed halving tree, so the partial of every chunk depends on its values alone.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {
namespace {

__global__ void square_sum_kernel(const float* const* tensors, const gpu::AdamwChunk* chunks, double* partials) {
  const gpu::AdamwChunk chunk = chunks[blockIdx.x];
  const float* x = tensors[chunk.tensor] + chunk.offset;
  __shared__ double lanes[kmath::kBlockThreads];
  double sum = 0;
  for (std::uint32_t i = threadIdx.x; i < chunk.count; i += blockDim.x) {
    const double v = x[i];
    sum += v * v;
  }
  lanes[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = kmath::kBlockThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) lanes[threadIdx.x] += lanes[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = lanes[0];
}

}  // namespace

void square_sum_partials(cudaStream_t stream, const float* const* tensors, const void* chunks, int chunk_count,
                         double* partials) {
  if (chunk_count == 0) return;
  square_sum_kernel<<<chunk_count, kmath::kBlockThreads, 0, stream>>>(
      tensors, static_cast<const gpu::AdamwChunk*>(chunks), partials);
  WHALE_CUDA_CHECK_LAUNCH();
}

}  // namespace whale::exec::cuda

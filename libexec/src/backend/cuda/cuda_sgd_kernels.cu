// File: cuda_sgd_kernels.cu
// Multi-tensor SGD with momentum: one launch over a chunk list (gpu::adamw_chunks), one block
// per chunk, fp32 weights, gradients and momentum buffers (kmath::sgd_element); weight decay on
// the tensors marked decayed.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {
namespace {

__global__ void sgd_kernel(const SgdTensor* tensors, const gpu::AdamwChunk* chunks,
                           kmath::SgdScalars scalars) {
  const gpu::AdamwChunk chunk = chunks[blockIdx.x];
  const SgdTensor t = tensors[chunk.tensor];
  if (!t.decayed) scalars.weight_decay = 0.0f;
  for (std::uint32_t i = threadIdx.x; i < chunk.count; i += blockDim.x) {
    const std::size_t e = chunk.offset + i;
    float p = t.param[e], buffer = t.momentum_buffer[e];
    kmath::sgd_element(p, t.grad[e], buffer, scalars);
    t.param[e] = p;
    t.momentum_buffer[e] = buffer;
  }
}

}  // namespace

void sgd_multi_tensor(cudaStream_t stream, const SgdTensor* tensors, const void* chunks,
                      int chunk_count, const kmath::SgdScalars& scalars) {
  if (chunk_count == 0) return;
  sgd_kernel<<<chunk_count, kmath::kBlockThreads, 0, stream>>>(
      tensors, static_cast<const gpu::AdamwChunk*>(chunks), scalars);
  WHALE_CUDA_CHECK_LAUNCH();
}

}  // namespace whale::exec::cuda

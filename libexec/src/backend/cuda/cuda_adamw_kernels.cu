// File: cuda_adamw_kernels.cu
// Multi-tensor AdamW: one launch over a chunk list (gpu::adamw_chunks), one block per chunk;
// fp32 master weights and moments; the compute copy (bf16/fp16/fp32) rewritten from the new
// weight in the same pass.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {
namespace {

template <class T>
__global__ void adamw_kernel(const AdamwTensor<T>* tensors, const gpu::AdamwChunk* chunks,
                             kmath::AdamwScalars scalars) {
  const gpu::AdamwChunk chunk = chunks[blockIdx.x];
  const AdamwTensor<T> t = tensors[chunk.tensor];
  for (std::uint32_t i = threadIdx.x; i < chunk.count; i += blockDim.x) {
    const std::size_t e = chunk.offset + i;
    float p = t.param[e], m = t.m[e], v = t.v[e];
    kmath::adamw_element(p, to_float(t.grad[e]), m, v, scalars);
    t.param[e] = p;
    t.m[e] = m;
    t.v[e] = v;
    if (t.compute_copy != nullptr) t.compute_copy[e] = from_float<T>(p);
  }
}

}  // namespace

template <class T>
void adamw_multi_tensor(cudaStream_t stream, const AdamwTensor<T>* tensors, const void* chunks,
                        int chunk_count, const kmath::AdamwScalars& scalars) {
  if (chunk_count == 0) return;
  adamw_kernel<<<chunk_count, kmath::kBlockThreads, 0, stream>>>(
      tensors, static_cast<const gpu::AdamwChunk*>(chunks), scalars);
  WHALE_CUDA_CHECK_LAUNCH();
}

#define WHALE_INSTANTIATE_ADAMW(T)                                                        \
  template void adamw_multi_tensor<T>(cudaStream_t, const AdamwTensor<T>*, const void*, int, \
                                      const kmath::AdamwScalars&);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_ADAMW)

}  // namespace whale::exec::cuda

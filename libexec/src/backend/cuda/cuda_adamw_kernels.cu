// File: cuda_adamw_kernels.cu
// Multi-tensor AdamW: one launch over a chunk list (gpu::adamw_chunks), one block per chunk;
// fp32 master weights and moments; the compute copy (bf16/fp16/fp32) rewritten from the new
// weight in the same pass.
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {
namespace {

/// Element e of tensor t: the AdamW step of its fp32 master weight and moments.
template <class T>
__device__ __forceinline__ void adamw_at(const AdamwTensor<T>& t, std::size_t e, float grad,
                                         const kmath::AdamwScalars& scalars) {
  float p = t.param[e], m = t.m[e], v = t.v[e];
  kmath::adamw_element(p, grad, m, v, scalars);
  t.param[e] = p;
  t.m[e] = m;
  t.v[e] = v;
  if (t.compute_copy != nullptr) t.compute_copy[e] = from_float<T>(p);
}

__device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <class T>
__global__ void adamw_kernel(const AdamwTensor<T>* tensors, const gpu::AdamwChunk* chunks,
                             kmath::AdamwScalars scalars) {
  const gpu::AdamwChunk chunk = chunks[blockIdx.x];
  const AdamwTensor<T> t = tensors[chunk.tensor];
  if (!t.decayed) scalars.weight_decay = 0.0f;
  const std::size_t first = chunk.offset;
  // fp32 tensors of 16-byte aligned chunks: four elements a thread through float4 loads, the
  // same arithmetic element by element.
  if (std::is_same_v<T, float> && chunk.count % 4 == 0 && aligned16(t.param + first) &&
      aligned16(t.grad + first) && aligned16(t.m + first) && aligned16(t.v + first)) {
    for (std::uint32_t i = 4 * threadIdx.x; i < chunk.count; i += 4 * blockDim.x) {
      const std::size_t e = first + i;
      float p[4], g[4], m[4], v[4];
      *reinterpret_cast<float4*>(p) = *reinterpret_cast<const float4*>(t.param + e);
      *reinterpret_cast<float4*>(m) = *reinterpret_cast<const float4*>(t.m + e);
      *reinterpret_cast<float4*>(v) = *reinterpret_cast<const float4*>(t.v + e);
      for (int j = 0; j < 4; ++j) g[j] = to_float(t.grad[e + j]);
#pragma unroll
      for (int j = 0; j < 4; ++j) kmath::adamw_element(p[j], g[j], m[j], v[j], scalars);
      *reinterpret_cast<float4*>(t.param + e) = *reinterpret_cast<const float4*>(p);
      *reinterpret_cast<float4*>(t.m + e) = *reinterpret_cast<const float4*>(m);
      *reinterpret_cast<float4*>(t.v + e) = *reinterpret_cast<const float4*>(v);
      if (t.compute_copy != nullptr)
        for (int j = 0; j < 4; ++j) t.compute_copy[e + j] = from_float<T>(p[j]);
    }
    return;
  }
  for (std::uint32_t i = threadIdx.x; i < chunk.count; i += blockDim.x)
    adamw_at(t, first + i, to_float(t.grad[first + i]), scalars);
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

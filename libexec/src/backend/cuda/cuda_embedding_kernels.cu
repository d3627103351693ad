// File: cuda_embedding_kernels.cu
// Token + position embedding CUDA kernels. Backward is deterministic without atomics: one block
// per distinct token sums its positions' rows in position order (gpu::token_buckets), and one
// thread per (t, c) sums the batch in order: the CPU backend's order, so bit-equal in fp32.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernel_math/elementwise_math.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {
namespace {

template <class T>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* wte, const T* wpe,
                                         std::size_t count, int sequence, int channels) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::size_t n = i / channels;
    const int c = static_cast<int>(i % channels);
    const std::size_t t = n % static_cast<std::size_t>(sequence);
    // A negative token is another tensor rank's row: only the position is added (none where
    // wpe is null: a model without learned positions).
    const float token = tokens[n] < 0 ? 0.0f : to_float(wte[static_cast<std::size_t>(tokens[n]) * channels + c]);
    out[i] = from_float<T>(wpe == nullptr ? token : token + to_float(wpe[t * channels + c]));
  }
}

/// Block i: distinct token i; threads stride over the channels.
template <class T>
__global__ void embedding_token_grad_kernel(float* dwte, const T* dout, const int32_t* bucket_tokens,
                                            const int32_t* offsets, const int32_t* positions,
                                            int channels) {
  const int i = blockIdx.x;
  float* row = dwte + static_cast<std::size_t>(bucket_tokens[i]) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    float sum = row[c];
    for (int p = offsets[i]; p < offsets[i + 1]; ++p)
      sum += to_float(dout[static_cast<std::size_t>(positions[p]) * channels + c]);
    row[c] = sum;
  }
}

/// One thread per (t, c) of dwpe: the batch's rows at position t, in sample order.
template <class T>
__global__ void embedding_position_grad_kernel(float* dwpe, const T* dout, int batch, int sequence,
                                               int channels) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::size_t>(sequence) * channels) return;
  float sum = dwpe[i];
  for (int b = 0; b < batch; ++b)
    sum += to_float(dout[static_cast<std::size_t>(b) * sequence * channels + i]);
  dwpe[i] = sum;
}

}  // namespace

template <class T>
void embedding_forward(cudaStream_t stream, T* out, const int32_t* tokens, const T* wte,
                       const T* wpe, int batch, int sequence, int channels) {
  const std::size_t count = static_cast<std::size_t>(batch) * sequence * channels;
  const kmath::Launch l = kmath::elementwise_launch(count);
  if (l.grid_x == 0) return;
  embedding_forward_kernel<<<l.grid_x, l.block, 0, stream>>>(out, tokens, wte, wpe, count,
                                                             sequence, channels);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void embedding_backward(cudaStream_t stream, float* dwte, float* dwpe, const T* dout,
                        const int32_t* bucket_tokens, const int32_t* bucket_offsets,
                        const int32_t* bucket_positions, int distinct, int batch, int sequence,
                        int channels) {
  if (distinct > 0) {
    embedding_token_grad_kernel<<<distinct, kmath::kBlockThreads, 0, stream>>>(
        dwte, dout, bucket_tokens, bucket_offsets, bucket_positions, channels);
    WHALE_CUDA_CHECK_LAUNCH();
  }
  if (dwpe == nullptr) return;  // no position table
  const kmath::Launch l = kmath::column_launch(sequence * channels);  // one thread per (t, c)
  if (l.grid_x == 0) return;
  embedding_position_grad_kernel<<<l.grid_x, l.block, 0, stream>>>(dwpe, dout, batch, sequence,
                                                                   channels);
  WHALE_CUDA_CHECK_LAUNCH();
}

#define WHALE_INSTANTIATE_EMBEDDING(T)                                                          \
  template void embedding_forward<T>(cudaStream_t, T*, const int32_t*, const T*, const T*, int, \
                                     int, int);                                                 \
  template void embedding_backward<T>(cudaStream_t, float*, float*, const T*, const int32_t*,  \
                                      const int32_t*, const int32_t*, int, int, int, int);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_EMBEDDING)

}  // namespace whale::exec::cuda

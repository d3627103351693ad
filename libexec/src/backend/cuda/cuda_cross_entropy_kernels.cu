// File: cuda_cross_entropy_kernels.cu
// Fused softmax + cross-entropy: one block per row streams the vocabulary once for the online
// softmax state (max, sum), merges it across the block, and (backward) streams it again to write
// the gradient in the logits' dtype. No fp32 probability tensor is ever materialised.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_warp.h"
#include "backend/kernel_math/launch_geometry.h"
#include "backend/kernel_math/online_softmax.h"

namespace whale::exec::cuda {
namespace {
constexpr int kWarps = kmath::kBlockThreads / kmath::kWarpSize;

/// The online softmax state of the block's row x[0, columns): lanes stride the row, each warp
/// merges by butterfly, then every thread merges the warps' states in order through
/// `warp_states` (kWarps, shared), so all threads return the same state. A barrier inside.
template <class T>
__device__ kmath::OnlineSoftmax block_softmax_state(const T* x, int columns,
                                                    kmath::OnlineSoftmax* warp_states) {
  kmath::OnlineSoftmax state;
  for (int v = threadIdx.x; v < columns; v += blockDim.x)
    state = kmath::online_softmax_update(state, to_float(x[v]));
  state = warp_merge(state);
  if (threadIdx.x % kmath::kWarpSize == 0) warp_states[threadIdx.x / kmath::kWarpSize] = state;
  __syncthreads();
  kmath::OnlineSoftmax total = warp_states[0];
  for (int w = 1; w < kWarps; ++w) total = kmath::online_softmax_merge(total, warp_states[w]);
  return total;
}

template <class T>
__global__ void __launch_bounds__(kmath::kBlockThreads)
    cross_entropy_kernel(float* losses, T* dlogits, const T* logits, const int32_t* targets,
                         int vocabulary, float scale, bool accumulate) {
  __shared__ kmath::OnlineSoftmax warp_states[kWarps];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * vocabulary;
  const T* x = logits + base;
  const int target = targets[blockIdx.x];
  const bool valid = kmath::target_in_vocabulary(target, vocabulary);  // else x[target] is unread
  // Read before the barrier: in place, other threads overwrite the row after it.
  const float target_logit = threadIdx.x == 0 && valid ? to_float(x[target]) : 0.0f;
  const kmath::OnlineSoftmax total = block_softmax_state(x, vocabulary, warp_states);
  const float lse = kmath::online_softmax_logsumexp(total);
  if (threadIdx.x == 0) losses[blockIdx.x] = valid ? lse - target_logit : NAN;
  if (dlogits == nullptr) return;
  // In place (dlogits == logits, no accumulate): every thread's reads of the first pass
  // finished before the barrier above, and here each element is read by the thread writing it.
  T* dx = dlogits + base;
  for (int v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    const float grad = kmath::cross_entropy_grad(to_float(x[v]), lse, v == target, scale);
    dx[v] = from_float<T>(accumulate ? to_float(dx[v]) + grad : grad);
  }
}

/// Block = one row of a vocabulary slice: its online softmax state and its target's logit.
template <class T>
__global__ void __launch_bounds__(kmath::kBlockThreads)
    cross_entropy_shard_statistics_kernel(float* statistics, const T* logits,
                                          const int32_t* targets, int columns) {
  __shared__ kmath::OnlineSoftmax warp_states[kWarps];
  const T* x = logits + static_cast<std::size_t>(blockIdx.x) * columns;
  const int target = targets[blockIdx.x];
  const kmath::OnlineSoftmax total = block_softmax_state(x, columns, warp_states);
  if (threadIdx.x != 0) return;
  float* out = statistics + static_cast<std::size_t>(blockIdx.x) * 4;
  out[0] = total.max;
  out[1] = total.sum;
  out[2] = 0.0f;  // the sum is a float here: no remainder
  out[3] = kmath::target_in_vocabulary(target, columns) ? to_float(x[target]) : 0.0f;
}

/// Block = one row of a vocabulary slice, its gradient written over its logits: each element
/// is read and written by one thread.
template <class T>
__global__ void __launch_bounds__(kmath::kBlockThreads)
    cross_entropy_shard_backward_kernel(T* logits, const int32_t* targets, const float* log_sum_exp,
                                        int columns, float scale) {
  T* x = logits + static_cast<std::size_t>(blockIdx.x) * columns;
  const int target = targets[blockIdx.x];
  const float lse = log_sum_exp[2 * blockIdx.x] + log_sum_exp[2 * blockIdx.x + 1];
  for (int v = threadIdx.x; v < columns; v += blockDim.x)
    x[v] = from_float<T>(kmath::cross_entropy_grad(to_float(x[v]), lse, v == target, scale));
}

}  // namespace

template <class T>
void cross_entropy_shard_statistics(cudaStream_t stream, float* statistics, const T* logits,
                                    const int32_t* targets, int rows, int columns) {
  const kmath::Launch l = kmath::cross_entropy_launch(rows);
  if (l.grid_x == 0) return;
  cross_entropy_shard_statistics_kernel<<<l.grid_x, l.block, 0, stream>>>(statistics, logits,
                                                                          targets, columns);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void cross_entropy_shard_backward(cudaStream_t stream, T* logits, const int32_t* targets,
                                  const float* log_sum_exp, int rows, int columns, float scale) {
  const kmath::Launch l = kmath::cross_entropy_launch(rows);
  if (l.grid_x == 0) return;
  cross_entropy_shard_backward_kernel<<<l.grid_x, l.block, 0, stream>>>(logits, targets,
                                                                        log_sum_exp, columns, scale);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void cross_entropy(cudaStream_t stream, float* losses, T* dlogits, const T* logits,
                   const int32_t* targets, int rows, int vocabulary, float scale,
                   bool accumulate) {
  const kmath::Launch l = kmath::cross_entropy_launch(rows);
  if (l.grid_x == 0) return;
  cross_entropy_kernel<<<l.grid_x, l.block, 0, stream>>>(losses, dlogits, logits, targets,
                                                         vocabulary, scale, accumulate);
  WHALE_CUDA_CHECK_LAUNCH();
}

#define WHALE_INSTANTIATE_CROSS_ENTROPY(T)                                                          \
  template void cross_entropy<T>(cudaStream_t, float*, T*, const T*, const int32_t*, int, int, float, bool); \
  template void cross_entropy_shard_statistics<T>(cudaStream_t, float*, const T*, const int32_t*, int, int); \
  template void cross_entropy_shard_backward<T>(cudaStream_t, T*, const int32_t*, const float*, int, int, float);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_CROSS_ENTROPY)

}  // namespace whale::exec::cuda

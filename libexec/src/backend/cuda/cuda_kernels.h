// File: cuda_kernels.h
// Host entry points of the CUDA backend's kernels, templated over the storage dtype T (float,
// __nv_bfloat16, __half); statistics, losses and optimizer state are fp32 and all arithmetic
// accumulates in fp32 (parameter-gradient column sums in double). Every launch goes on
// `stream`, uses kmath's launch geometry and is checked. Pointers are device memory, row-major,
// shapes as in backend.h. Backward launches ADD into their gradients. No float atomics: every
// output is written by one thread in a fixed order, so results are deterministic.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/kernel_math/adamw_math.h"
#include "backend/kernel_math/dropout_math.h"
#include "backend/kernel_math/sgd_math.h"
#include "whale/plan/moe.h"

namespace whale::exec::cuda {

// ---- point-wise (cuda_pointwise_kernels.cu) ------------------------------------------
template <class T>
void gelu_forward(cudaStream_t stream, T* out, const T* inp, std::size_t count);
template <class T>
void gelu_backward(cudaStream_t stream, T* dinp, const T* inp, const T* dout, std::size_t count);
/// data (rows, channels) *= the dropout factor of element (first_row + r, c), in place.
template <class T>
void dropout(cudaStream_t stream, T* data, const kmath::DropoutScalars& mask, uint64_t first_row,
             int rows, int channels);
/// out = silu(gate) * up.
template <class T>
void swiglu_forward(cudaStream_t stream, T* out, const T* gate, const T* up, std::size_t count);
/// dgate, dup += the gradients of silu(gate) * up.
template <class T>
void swiglu_backward(cudaStream_t stream, T* dgate, T* dup, const T* gate, const T* up,
                     const T* dout, std::size_t count);
/// out = a + b (out may alias a or b).
template <class T>
void add_forward(cudaStream_t stream, T* out, const T* a, const T* b, std::size_t count);
/// dst += src.
template <class T>
void accumulate(cudaStream_t stream, T* dst, const T* src, std::size_t count);
/// out (N, C) += bias (C).
template <class T>
void bias_add_forward(cudaStream_t stream, T* out, const T* bias, int rows, int channels);
/// dbias (C, fp32) += column sums of dout (N, C) in double (cuda_column_sum.cuh's fixed order);
/// partials: device scratch of kmath::column_partials_count(rows, channels) doubles.
template <class T>
void bias_add_backward(cudaStream_t stream, float* dbias, const T* dout, int rows, int channels,
                       double* partials);
/// dst = src converted (round-to-nearest-even when narrowing).
template <class Dst, class Src>
void cast(cudaStream_t stream, Dst* dst, const Src* src, std::size_t count);
/// data *= factor.
template <class T>
void scale(cudaStream_t stream, T* data, float factor, std::size_t count);
/// *flag = 1 when any element is inf or NaN (flag is device memory, set to 0 by the caller).
template <class T>
void find_non_finite(cudaStream_t stream, int* flag, const T* data, std::size_t count);

// ---- layernorm and RMSNorm (cuda_norm_kernels.cu) ------------------------------------------------
template <class T>
void layernorm_forward(cudaStream_t stream, T* out, float* mean, float* rstd, const T* inp,
                       const T* weight, const T* bias, int rows, int channels);
template <class T>
void layernorm_backward(cudaStream_t stream, T* dinp, float* dweight, float* dbias, const T* dout,
                        const T* inp, const T* weight, const float* mean, const float* rstd,
                        int rows, int channels, double* partials);

/// RMSNorm: out = inp * rstd * weight, rstd (N) saved.
template <class T>
void rmsnorm_forward(cudaStream_t stream, T* out, float* rstd, const T* inp, const T* weight,
                     int rows, int channels);
/// dinp += the input gradient; dweight (C, fp32) += column sums in double (the column-sum
/// order); layernorm and RMSNorm take partials as bias_add_backward does.
template <class T>
void rmsnorm_backward(cudaStream_t stream, T* dinp, float* dweight, const T* dout, const T* inp,
                      const T* weight, const float* rstd, int rows, int channels,
                      double* partials);

// ---- embedding (cuda_embedding_kernels.cu) -------------------------------------------
/// tokens (B*T) in device memory.
template <class T>
void embedding_forward(cudaStream_t stream, T* out, const int32_t* tokens, const T* wte,
                       const T* wpe, int batch, int sequence, int channels);
/// The buckets of gpu::token_buckets in device memory: `distinct` tokens, offsets
/// (distinct + 1) and positions (B*T); the gradients are fp32.
template <class T>
void embedding_backward(cudaStream_t stream, float* dwte, float* dwpe, const T* dout,
                        const int32_t* bucket_tokens, const int32_t* bucket_offsets,
                        const int32_t* bucket_positions, int distinct, int batch, int sequence,
                        int channels);

// ---- fused softmax + cross-entropy (cuda_cross_entropy_kernels.cu) -------------------
/// losses (N, fp32) = logsumexp(row) - row[target]; when dlogits is not null, also
/// dlogits += scale * (softmax - onehot) (accumulate) or = it (not), written in T without an
/// fp32 probability tensor. Without accumulate dlogits may be logits itself: each row is read
/// whole before any of it is written, each element read by the thread that writes it.
/// targets (N) in device memory.
template <class T>
void cross_entropy(cudaStream_t stream, float* losses, T* dlogits, const T* logits,
                   const int32_t* targets, int rows, int vocabulary, float scale,
                   bool accumulate = true);

/// One vocabulary slice (Backend::cross_entropy_shard_statistics): statistics (N, 4) fp32 =
/// max, sum of exp(x - max), 0 (no remainder), the target's logit or 0; a target outside
/// [0, columns) is another slice's.
template <class T>
void cross_entropy_shard_statistics(cudaStream_t stream, float* statistics, const T* logits,
                                    const int32_t* targets, int rows, int columns);
/// logits (N, columns) = scale * (exp(x - lse) - onehot), lse = log_sum_exp[2r] + [2r + 1].
template <class T>
void cross_entropy_shard_backward(cudaStream_t stream, T* logits, const int32_t* targets,
                                  const float* log_sum_exp, int rows, int columns, float scale);

// ---- flash attention (cuda_attention_kernels.cu) -------------------------------------
/// out (B, T, NH*HS) and lse (B, NH, T, fp32): the only saved softmax statistics; qkv
/// (B, T, (NH + 2*KV)*HS). Under `drop` (inactive: none) each probability meets V times its
/// mask factor; backward takes the same `drop`.
template <class T>
void attention_forward(cudaStream_t stream, T* out, float* lse, const T* qkv, int batch,
                       int sequence, int heads, int kv_heads, int head_size,
                       const kmath::AttentionDropoutScalars& drop);
/// dqkv (B, T, (NH + 2*KV)*HS) += the gradient; `delta` is fp32 scratch of B*NH*T floats.
template <class T>
void attention_backward(cudaStream_t stream, T* dqkv, const T* dout, const T* qkv, const T* out,
                        const float* lse, float* delta, int batch, int sequence, int heads,
                        int kv_heads, int head_size, const kmath::AttentionDropoutScalars& drop);

// ---- rotary position embedding (cuda_rope_kernels.cu) --------------------------------
/// In place on data (B, T, row_channels): the first `heads` heads of each row rotate
/// (inverse = false) or rotate back (inverse = true, the gradient).
template <class T>
void rope(cudaStream_t stream, T* data, int batch, int sequence, int row_channels, int heads,
          int head_size, double theta, bool inverse);

// ---- multi-tensor AdamW (cuda_adamw_kernels.cu) --------------------------------------
/// One tensor of a multi-tensor AdamW launch: fp32 master weight, moments, the gradient in T
/// and, when not null, the compute copy in T that the kernel rewrites from the new weight;
/// weight decay applies where `decayed` is not 0.
template <class T>
struct AdamwTensor {
  float* param;
  const T* grad;
  float* m;
  float* v;
  T* compute_copy;
  int decayed;
};
/// Updates every tensor of `tensors` (device array of `count` entries) over the chunk list
/// `chunks` (device array of gpu::AdamwChunk, `chunk_count` entries) in one launch.
template <class T>
void adamw_multi_tensor(cudaStream_t stream, const AdamwTensor<T>* tensors, const void* chunks,
                        int chunk_count, const kmath::AdamwScalars& scalars);

// ---- multi-tensor SGD with momentum (cuda_sgd_kernels.cu) ----------------------------
/// One tensor of a multi-tensor SGD launch: fp32 master weight, gradient and momentum buffer;
/// weight decay applies where `decayed` is not 0.
struct SgdTensor {
  float* param;
  const float* grad;
  float* momentum_buffer;
  int decayed;
};
/// Updates every tensor of `tensors` over the chunk list `chunks` (gpu::AdamwChunk entries,
/// `chunk_count` of them) in one launch, as adamw_multi_tensor does.
void sgd_multi_tensor(cudaStream_t stream, const SgdTensor* tensors, const void* chunks,
                      int chunk_count, const kmath::SgdScalars& scalars);

// ---- sums of squares (cuda_square_sum_kernels.cu) -------------------------------------
/// partials[c] = the sum of squares of chunk c (gpu::AdamwChunk entries over `tensors`, a
/// device array of fp32 tensor pointers), in double, each in an order fixed by its count.
void square_sum_partials(cudaStream_t stream, const float* const* tensors, const void* chunks, int chunk_count,
                         double* partials);

// ---- mixture of experts (cuda_moe_kernels.cu; per-row arithmetic of kernel_math/moe_math.h) --
/// One thread per row: probs (N, E), chosen (N, K), gates (N, K) of logits (N, E); `bias` (E)
/// is read by sigmoid_bias only.
template <class T>
void moe_router_forward(cudaStream_t stream, plan::MoeRouter router, float* probs,
                        int32_t* chosen, float* gates, const T* logits, const float* bias,
                        int rows, int experts, int top_k);
/// One thread per row: dlogits (N, E) += the router's gradient.
template <class T>
void moe_router_backward(cudaStream_t stream, plan::MoeRouter router, T* dlogits,
                         const float* probs, const int32_t* chosen, const float* gates,
                         const float* dgates, const float* aux_dprobs, int rows, int experts,
                         int top_k);
/// One thread per element of out (M, C) = inp rows source_rows.
template <class T>
void moe_dispatch_forward(cudaStream_t stream, T* out, const T* inp, const int32_t* source_rows,
                          int routed_rows, int channels);
/// One thread per element of dinp (N, C) += its slots' rows of dout, in slot order.
template <class T>
void moe_dispatch_backward(cudaStream_t stream, T* dinp, const T* dout, const int32_t* slot_rows,
                           int rows, int top_k, int channels);
/// One thread per element of out (N, C) += the gated sum of its slots' expert rows.
template <class T>
void moe_combine_forward(cudaStream_t stream, T* out, const T* expert_out, const float* gates,
                         const int32_t* slot_rows, int rows, int top_k, int channels);
/// One thread per (slot, channel) for dexpert_out, one per slot for dgates.
template <class T>
void moe_combine_backward(cudaStream_t stream, T* dexpert_out, float* dgates, const T* dout,
                          const T* expert_out, const float* gates, const int32_t* slot_rows,
                          int rows, int top_k, int channels);

}  // namespace whale::exec::cuda

// File: cuda_flash_attention_mma.h
// The tensor-core flash attention (FlashAttention-2 blocking, mma.sync m16n8k16 with fp32
// accumulation) for bf16 and fp16 at head sizes 64 and 128: the fast path that
// cuda::attention_forward/backward take when flash_mma_supports says so (the scalar kernels
// serve fp32, the other head sizes and unaligned tensors).
#pragma once

#include <cuda_runtime.h>

#include "backend/kernel_math/dropout_math.h"

namespace whale::exec::cuda {

/// True when the tensor-core kernels take these tensors: T is bf16 or fp16, head_size is 64 or
/// 128, and every pointer given (null ones are skipped) is 16-byte aligned (rows are read as
/// 16-byte vectors).
template <class T>
bool flash_mma_supports(int head_size, const void* a, const void* b = nullptr,
                        const void* c = nullptr);

/// out (B, T, NH*HS) and lse (B, NH, T) fp32 (natural log) from qkv (B, T, (NH + 2*KV)*HS),
/// causal; one block of 4 warps per (64-query tile, b * NH + h). Under `drop` each probability
/// meets V times its mask factor; the row sums (and lse) are of the undropped probabilities.
template <class T>
void flash_mma_forward(cudaStream_t stream, T* out, float* lse, const T* qkv, int batch,
                       int sequence, int heads, int kv_heads, int head_size,
                       const kmath::AttentionDropoutScalars& drop);

/// dqkv += the gradient, from the forward's lse and delta = rowsum(dout * out) (both (B, NH, T)
/// fp32): one kernel writes dq (a block per query tile), one dk and dv (a block per key tile
/// and key/value head, its query heads in head order); no atomics, deterministic. `drop` is
/// the forward's.
template <class T>
void flash_mma_backward(cudaStream_t stream, T* dqkv, const T* dout, const T* qkv,
                        const float* lse, const float* delta, int batch, int sequence, int heads,
                        int kv_heads, int head_size, const kmath::AttentionDropoutScalars& drop);

}  // namespace whale::exec::cuda

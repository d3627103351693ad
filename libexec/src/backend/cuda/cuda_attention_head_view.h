// File: cuda_attention_head_view.h
// Where one (sample, query head) of the attention tensors lives, for the scalar and the
// tensor-core attention kernels: qkv (B, T, (NH + 2*KV)*HS) rows, out (B, T, NH*HS) rows and the
// per-row statistics (B, NH, T).
#pragma once

#include <cstddef>

#include "backend/kernel_math/attention_math.h"

namespace whale::exec::cuda {

/// Element offsets of row 0's query, key and value columns, of out's row 0 and of the row
/// statistics (lse, delta) of one (b, h); qkv rows are (NH + 2*KV)*HS apart, out rows NH*HS.
struct HeadView {
  std::size_t q, k, v, out, stats;
  int qkv_stride, out_stride;
};

__device__ __forceinline__ HeadView head_view(int b, int h, int sequence, int heads, int kv_heads,
                                              int head_size) {
  const int channels = heads * head_size, kv_channels = kv_heads * head_size;
  const int stride = channels + 2 * kv_channels;
  const std::size_t base = static_cast<std::size_t>(b) * sequence * stride;
  const std::size_t kv_col = static_cast<std::size_t>(kmath::kv_head_of(h, heads, kv_heads)) * head_size;
  return {base + static_cast<std::size_t>(h) * head_size, base + channels + kv_col,
          base + channels + kv_channels + kv_col,
          static_cast<std::size_t>(b) * sequence * channels + static_cast<std::size_t>(h) * head_size,
          (static_cast<std::size_t>(b) * heads + h) * sequence, stride, channels};
}

/// The query head's view of block row blockIdx.y = b * NH + h.
__device__ __forceinline__ HeadView query_head_view(int sequence, int heads, int kv_heads,
                                                    int head_size) {
  const int bh = static_cast<int>(blockIdx.y);
  return head_view(bh / heads, bh % heads, sequence, heads, kv_heads, head_size);
}

}  // namespace whale::exec::cuda

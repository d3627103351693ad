// File: cuda_attention_kernels.cu
// The attention entry points: bf16/fp16 at head sizes 64 and 128 go to the tensor-core kernels
// (cuda_flash_attention_mma.cu); everything else (fp32, other head sizes) to the scalar
// flash-style causal attention here (multi-head or grouped-query): one thread per query (forward, dq)
// or key (dk, dv, summed over the key/value head's query heads in head order) row, tiles of
// kAttentionTile keys or queries staged in shared memory as fp32, the online-softmax recurrence
// of kmath::flash_forward_tile. Forward saves only each row's log-sum-exp; backward recomputes
// the scores (never a (B, NH, T, T) tensor) and writes dq and dk/dv from separate kernels, each
// element by one thread in a fixed order: deterministic, no atomics. Attention dropout multiplies
// each probability by its mask factor (kernel_math/dropout_math.h) where it meets V, in the
// forward and in both backward kernels alike.
#include "backend/cuda/cuda_attention_head_view.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_flash_attention_mma.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernel_math/attention_math.h"
#include "backend/kernel_math/launch_geometry.h"

#include <type_traits>

namespace whale::exec::cuda {
namespace {
using kmath::kAttentionTile;
using kmath::kMaxHeadSize;

/// Copies `rows` rows (head_size wide, `stride` apart in global memory) into a dense fp32 tile.
template <class T>
__device__ void load_tile(float* tile, const T* src, int rows, int stride, int head_size) {
  for (int e = threadIdx.x; e < rows * head_size; e += blockDim.x)
    tile[e] = to_float(src[static_cast<std::size_t>(e / head_size) * stride + e % head_size]);
}

template <class T>
__device__ void load_row(float* row, const T* src, int head_size) {
  for (int d = 0; d < head_size; ++d) row[d] = to_float(src[d]);
}

/// The dropout mask row of query 0 of block row blockIdx.y = b * NH + h.
__device__ __forceinline__ uint64_t query_head_mask_row(const kmath::AttentionDropoutScalars& drop,
                                                        int sequence, int heads) {
  const int bh = static_cast<int>(blockIdx.y);
  return kmath::attention_head_row(drop, bh / heads, bh % heads, sequence);
}

template <class T>
__global__ void attention_forward_kernel(T* out, float* lse, const T* qkv, int sequence, int heads,
                                         int kv_heads, int head_size, float scale,
                                         kmath::AttentionDropoutScalars drop) {
  extern __shared__ float shared[];
  float* k_tile = shared;
  float* v_tile = shared + kAttentionTile * head_size;
  const HeadView hv = query_head_view(sequence, heads, kv_heads, head_size);
  const kmath::TileRows queries = kmath::tile_rows(blockIdx.x, sequence);
  const int i = queries.first + threadIdx.x;
  const bool active = threadIdx.x < queries.count;
  float q[kMaxHeadSize];
  if (active) load_row(q, qkv + hv.q + static_cast<std::size_t>(i) * hv.qkv_stride, head_size);
  kmath::FlashRow row;
  kmath::flash_row_init(row, head_size);
  const uint64_t mask_row = query_head_mask_row(drop, sequence, heads) + static_cast<uint64_t>(i);
  for (int kt = 0; kt <= static_cast<int>(blockIdx.x); ++kt) {
    const kmath::TileRows keys = kmath::tile_rows(kt, sequence);
    const std::size_t first = static_cast<std::size_t>(keys.first) * hv.qkv_stride;
    load_tile(k_tile, qkv + hv.k + first, keys.count, hv.qkv_stride, head_size);
    load_tile(v_tile, qkv + hv.v + first, keys.count, hv.qkv_stride, head_size);
    __syncthreads();
    if (active)
      kmath::flash_forward_tile(row, q, k_tile, v_tile, head_size,
                                kmath::causal_keys_in_tile(i, keys.first, keys.count), head_size, scale,
                                drop.mask, mask_row, keys.first);
    __syncthreads();
  }
  if (!active) return;
  T* o = out + hv.out + static_cast<std::size_t>(i) * hv.out_stride;
  for (int d = 0; d < head_size; ++d) o[d] = from_float<T>(kmath::flash_output(row, d));
  lse[hv.stats + i] = kmath::flash_logsumexp(row);
}

/// delta (B, NH, T) = rowwise dout . out per head.
template <class T>
__global__ void attention_delta_kernel(float* delta, const T* dout, const T* out, int sequence,
                                       int heads, int head_size, int rows) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int bh = r / sequence, i = r % sequence;
  const HeadView hv = head_view(bh / heads, bh % heads, sequence, heads, heads, head_size);
  const std::size_t at = hv.out + static_cast<std::size_t>(i) * hv.out_stride;
  float sum = 0.0f;
  for (int d = 0; d < head_size; ++d) sum += to_float(dout[at + d]) * to_float(out[at + d]);
  delta[r] = sum;
}

template <class T>
__global__ void attention_dq_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse,
                                    const float* delta, int sequence, int heads, int kv_heads,
                                    int head_size, float scale, kmath::AttentionDropoutScalars drop) {
  extern __shared__ float shared[];
  float* k_tile = shared;
  float* v_tile = shared + kAttentionTile * head_size;
  const HeadView hv = query_head_view(sequence, heads, kv_heads, head_size);
  const kmath::TileRows queries = kmath::tile_rows(blockIdx.x, sequence);
  const int i = queries.first + threadIdx.x;
  const bool active = threadIdx.x < queries.count;
  float q[kMaxHeadSize], dO[kMaxHeadSize], dq[kMaxHeadSize];
  if (active) {
    load_row(q, qkv + hv.q + static_cast<std::size_t>(i) * hv.qkv_stride, head_size);
    load_row(dO, dout + hv.out + static_cast<std::size_t>(i) * hv.out_stride, head_size);
  }
  for (int d = 0; d < head_size; ++d) dq[d] = 0.0f;
  const float row_lse = active ? lse[hv.stats + i] : 0.0f;
  const float row_delta = active ? delta[hv.stats + i] : 0.0f;
  const uint64_t mask_row = query_head_mask_row(drop, sequence, heads) + static_cast<uint64_t>(i);
  for (int kt = 0; kt <= static_cast<int>(blockIdx.x); ++kt) {
    const kmath::TileRows keys = kmath::tile_rows(kt, sequence);
    const std::size_t first = static_cast<std::size_t>(keys.first) * hv.qkv_stride;
    load_tile(k_tile, qkv + hv.k + first, keys.count, hv.qkv_stride, head_size);
    load_tile(v_tile, qkv + hv.v + first, keys.count, hv.qkv_stride, head_size);
    __syncthreads();
    if (active)
      kmath::flash_backward_dq_tile(dq, q, dO, row_lse, row_delta, k_tile, v_tile, head_size,
                                    kmath::causal_keys_in_tile(i, keys.first, keys.count),
                                    head_size, scale, drop.mask, mask_row, keys.first);
    __syncthreads();
  }
  if (!active) return;
  T* g = dqkv + hv.q + static_cast<std::size_t>(i) * hv.qkv_stride;
  for (int d = 0; d < head_size; ++d) g[d] = from_float<T>(to_float(g[d]) + dq[d]);
}

/// Block row blockIdx.y = b * KV + key/value head; its query heads in order, each over the
/// query tiles at or after the key tile.
template <class T>
__global__ void attention_dkv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse,
                                     const float* delta, int sequence, int heads, int kv_heads,
                                     int head_size, float scale,
                                     kmath::AttentionDropoutScalars drop) {
  extern __shared__ float shared[];
  float* q_tile = shared;
  float* do_tile = shared + kAttentionTile * head_size;
  float* lse_tile = do_tile + kAttentionTile * head_size;
  float* delta_tile = lse_tile + kAttentionTile;
  const int b = static_cast<int>(blockIdx.y) / kv_heads, kv = static_cast<int>(blockIdx.y) % kv_heads;
  const int group = heads / kv_heads;
  const HeadView kv_view = head_view(b, kv * group, sequence, heads, kv_heads, head_size);
  const kmath::TileRows keys = kmath::tile_rows(blockIdx.x, sequence);
  const int j = keys.first + threadIdx.x;
  const bool active = threadIdx.x < keys.count;
  float k[kMaxHeadSize], v[kMaxHeadSize], dk[kMaxHeadSize], dv[kMaxHeadSize];
  if (active) {
    load_row(k, qkv + kv_view.k + static_cast<std::size_t>(j) * kv_view.qkv_stride, head_size);
    load_row(v, qkv + kv_view.v + static_cast<std::size_t>(j) * kv_view.qkv_stride, head_size);
  }
  for (int d = 0; d < head_size; ++d) dk[d] = dv[d] = 0.0f;
  const int tiles = (sequence + kAttentionTile - 1) / kAttentionTile;
  for (int h = kv * group; h < (kv + 1) * group; ++h) {
    const HeadView hv = head_view(b, h, sequence, heads, kv_heads, head_size);
    for (int qt = blockIdx.x; qt < tiles; ++qt) {
      const kmath::TileRows queries = kmath::tile_rows(qt, sequence);
      load_tile(q_tile, qkv + hv.q + static_cast<std::size_t>(queries.first) * hv.qkv_stride,
                queries.count, hv.qkv_stride, head_size);
      load_tile(do_tile, dout + hv.out + static_cast<std::size_t>(queries.first) * hv.out_stride,
                queries.count, hv.out_stride, head_size);
      for (int r = threadIdx.x; r < queries.count; r += blockDim.x) {
        lse_tile[r] = lse[hv.stats + queries.first + r];
        delta_tile[r] = delta[hv.stats + queries.first + r];
      }
      __syncthreads();
      if (active) {
        const kmath::TileRows seen = kmath::causal_queries_in_tile(j, queries.first, queries.count);
        const int skip = seen.first - queries.first;
        kmath::flash_backward_dkv_tile(dk, dv, k, v, q_tile + skip * head_size,
                                       do_tile + skip * head_size, lse_tile + skip,
                                       delta_tile + skip, head_size, seen.count, head_size, scale,
                                       drop.mask,
                                       kmath::attention_head_row(drop, b, h, sequence) +
                                           static_cast<uint64_t>(seen.first),
                                       j);
      }
      __syncthreads();
    }
  }
  if (!active) return;
  T* gk = dqkv + kv_view.k + static_cast<std::size_t>(j) * kv_view.qkv_stride;
  T* gv = dqkv + kv_view.v + static_cast<std::size_t>(j) * kv_view.qkv_stride;
  for (int d = 0; d < head_size; ++d) {
    gk[d] = from_float<T>(to_float(gk[d]) + dk[d]);
    gv[d] = from_float<T>(to_float(gv[d]) + dv[d]);
  }
}

float score_scale(int head_size) { return 1.0f / sqrtf(static_cast<float>(head_size)); }

}  // namespace

template <class T>
void attention_forward(cudaStream_t stream, T* out, float* lse, const T* qkv, int batch,
                       int sequence, int heads, int kv_heads, int head_size,
                       const kmath::AttentionDropoutScalars& drop) {
  if constexpr (!std::is_same_v<T, float>) {
    if (flash_mma_supports<T>(head_size, out, qkv)) {
      flash_mma_forward(stream, out, lse, qkv, batch, sequence, heads, kv_heads, head_size, drop);
      return;
    }
  }
  const kmath::Launch l = kmath::attention_launch(batch, sequence, heads, head_size, false);
  if (l.grid_x == 0 || l.grid_y == 0) return;
  attention_forward_kernel<<<dim3(l.grid_x, l.grid_y), l.block, l.shared_bytes, stream>>>(
      out, lse, qkv, sequence, heads, kv_heads, head_size, score_scale(head_size), drop);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T>
void attention_backward(cudaStream_t stream, T* dqkv, const T* dout, const T* qkv, const T* out,
                        const float* lse, float* delta, int batch, int sequence, int heads,
                        int kv_heads, int head_size, const kmath::AttentionDropoutScalars& drop) {
  const kmath::Launch dq = kmath::attention_launch(batch, sequence, heads, head_size, false);
  const kmath::Launch dkv = kmath::attention_launch(batch, sequence, kv_heads, head_size, true);
  if (dq.grid_x == 0 || dq.grid_y == 0) return;
  const int rows = batch * heads * sequence;
  const kmath::Launch d = kmath::column_launch(rows);  // one thread per row
  attention_delta_kernel<<<d.grid_x, d.block, 0, stream>>>(delta, dout, out, sequence, heads,
                                                           head_size, rows);
  WHALE_CUDA_CHECK_LAUNCH();
  if constexpr (!std::is_same_v<T, float>) {
    if (flash_mma_supports<T>(head_size, qkv, dout)) {
      flash_mma_backward(stream, dqkv, dout, qkv, lse, delta, batch, sequence, heads, kv_heads,
                         head_size, drop);
      return;
    }
  }
  const float scale = score_scale(head_size);
  attention_dq_kernel<<<dim3(dq.grid_x, dq.grid_y), dq.block, dq.shared_bytes, stream>>>(
      dqkv, dout, qkv, lse, delta, sequence, heads, kv_heads, head_size, scale, drop);
  WHALE_CUDA_CHECK_LAUNCH();
  attention_dkv_kernel<<<dim3(dkv.grid_x, dkv.grid_y), dkv.block, dkv.shared_bytes, stream>>>(
      dqkv, dout, qkv, lse, delta, sequence, heads, kv_heads, head_size, scale, drop);
  WHALE_CUDA_CHECK_LAUNCH();
}

#define WHALE_INSTANTIATE_ATTENTION(T)                                                           \
  template void attention_forward<T>(cudaStream_t, T*, float*, const T*, int, int, int, int, int, \
                                     const kmath::AttentionDropoutScalars&);                     \
  template void attention_backward<T>(cudaStream_t, T*, const T*, const T*, const T*,          \
                                      const float*, float*, int, int, int, int, int,           \
                                      const kmath::AttentionDropoutScalars&);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_ATTENTION)

}  // namespace whale::exec::cuda

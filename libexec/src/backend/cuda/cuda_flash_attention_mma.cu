// File: cuda_flash_attention_mma.cu
// Tensor-core flash attention for bf16/fp16 (see cuda_flash_attention_mma.h). Each warp owns 16
// rows of its block's tile; scores, probabilities and the output/gradient accumulators live in
// mma.sync m16n8k16 fragments (registers, fp32), the tiles of q, k, v and dout in shared memory
// as raw 16-bit values, rows padded by 8 elements so that the fragment loads hit 32 distinct
// banks. The tile-level math (mask, online-softmax merge, dS) is kmath's (flash_tile_math.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cuda/cuda_attention_head_view.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_flash_attention_mma.h"
#include "backend/kernel_math/dropout_math.h"
#include "backend/kernel_math/flash_tile_math.h"

namespace whale::exec::cuda {
namespace {

constexpr int kWarps = 4, kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 16;                    // the m of m16n8k16
constexpr int kBlockRows = kWarps * kRowsPerWarp;   // queries (forward, dq) or keys (dk, dv) per block
constexpr int kPad = 8;                             // elements added to each shared row

/// Queries per inner tile of the dk/dv kernel: 32 at head size 128 keeps its two (16 x 128)
/// accumulators and two (16 x 32) score tiles within the register file.
template <int D>
constexpr int kDkvQueryRows = D == 128 ? 32 : 64;

// ---- mma.sync fragments ---------------------------------------------------------------
// Per PTX ISA "mma.m16n8k16": lane = 4 * g + t. A (16x16, row): a0 (g, 2t..2t+1), a1 (g+8, 2t..),
// a2 (g, 2t+8..), a3 (g+8, 2t+8..). B (16x8, col): b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g).
// C (16x8): c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1). The lower column sits in the low half.

/// c += a b on the tensor cores, the operands' element type named in PTX ("bf16", "f16").
#define WHALE_MMA_M16N8K16(TYPE)                                                            \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE                        \
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                 \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], const uint32_t b[2], __nv_bfloat16) {
  WHALE_MMA_M16N8K16("bf16");
}
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], const uint32_t b[2], __half) {
  WHALE_MMA_M16N8K16("f16");
}
#undef WHALE_MMA_M16N8K16

/// Two floats rounded to T and packed (lo in the low half).
__device__ __forceinline__ uint32_t pack(float lo, float hi, __nv_bfloat16) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return bits;
}
__device__ __forceinline__ uint32_t pack(float lo, float hi, __half) {
  const __half2 v = __floats2half2_rn(lo, hi);
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return bits;
}

struct Lane {
  int warp, g, t;
};
__device__ __forceinline__ Lane this_lane() {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  return {static_cast<int>(threadIdx.x) / 32, lane / 4, lane % 4};
}

// ---- fragment loads: ldmatrix ---------------------------------------------------------
// ldmatrix.x4 (x2) loads four (two) 8x8 matrices of 16-bit values from shared memory, lanes
// 8j..8j+7 naming the 16-byte rows of matrix j; lane 4g + t receives row g, columns 2t..2t+1 of
// each (with .trans, of its transpose), exactly the mma fragment layout above. Every tile row is
// 16-byte aligned ((D + kPad) * 2 bytes apart), and 8 rows of one matrix fall in 32 distinct
// banks ((D + kPad) * 2 / 4 = 4 mod 32 words apart at D = 64 and 128).

__device__ __forceinline__ uint32_t shared_address(const uint16_t* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ int lane_id(Lane l) { return 4 * l.g + l.t; }

/// A fragment of rows r0..r0+15, columns k0..k0+15 of a row-major tile (ld elements a row):
/// matrices (rows r0.., k0..), (r0+8.., k0..), (r0.., k0+8..), (r0+8.., k0+8..) are a0..a3.
__device__ __forceinline__ void load_a(uint32_t a[4], const uint16_t* s, int ld, int r0, int k0, Lane l) {
  const int lane = lane_id(l);
  const uint16_t* p = s + (r0 + lane % 8 + 8 * ((lane / 8) % 2)) * ld + k0 + 8 * (lane / 16);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(shared_address(p)));
}

/// B fragment (k0..k0+15) x (n0..n0+7) of a tile stored [n][k] (k contiguous): B = tile^T;
/// matrices (rows n0.., k0..) and (n0.., k0+8..) are b0 and b1 (lanes 16..31 name no row).
__device__ __forceinline__ void load_b_nk(uint32_t b[2], const uint16_t* s, int ld, int n0, int k0, Lane l) {
  const int lane = lane_id(l) % 16;
  const uint16_t* p = s + (n0 + lane % 8) * ld + k0 + 8 * (lane / 8);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(b[0]), "=r"(b[1])
               : "r"(shared_address(p)));
}

/// B fragment (k0..k0+15) x (n0..n0+7) of a tile stored [k][n] (n contiguous): B = tile; the
/// transposes of matrices (rows k0.., n0..) and (k0+8.., n0..) are b0 and b1.
__device__ __forceinline__ void load_b_kn(uint32_t b[2], const uint16_t* s, int ld, int k0, int n0, Lane l) {
  const uint16_t* p = s + (k0 + lane_id(l) % 16) * ld + n0;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(b[0]), "=r"(b[1])
               : "r"(shared_address(p)));
}

/// The A fragment (16 rows x keys 16*kk..16*kk+15) of a probability/gradient tile held as C
/// fragments c[n-tile][4] (FlashAttention-2's register reuse: C's layout is A's).
template <class T>
__device__ __forceinline__ void c_to_a(uint32_t a[4], const float (*c)[4], int kk) {
  a[0] = pack(c[2 * kk][0], c[2 * kk][1], T{});
  a[1] = pack(c[2 * kk][2], c[2 * kk][3], T{});
  a[2] = pack(c[2 * kk + 1][0], c[2 * kk + 1][1], T{});
  a[3] = pack(c[2 * kk + 1][2], c[2 * kk + 1][3], T{});
}

/// acc (16 rows x D, n-tiles of 8) += C (16 rows x K, held as C fragments c[K/8][4], used as
/// A) times the [k][n] tile b (K rows of D, padded to D + kPad): P V, dS K, P^T dO, dS^T Q.
template <class T, int D, int K>
__device__ __forceinline__ void accumulate_product(float (*acc)[4], const float (*c)[4],
                                                   const uint16_t* b, Lane l) {
  constexpr int ld = D + kPad;
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[4];
    c_to_a<T>(a, c, kk);
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      uint32_t f[2];
      load_b_kn(f, b, ld, kk * 16, dt * 8, l);
      mma(acc[dt], a, f, T{});
    }
  }
}

/// x += A B^T for the warp's 16 rows r0.. (head size D, NT n-tiles of 8 columns): the A tile
/// stored [row][d], the B tile [column][d], both padded to D + kPad (S = Q K^T, dP = dO V^T
/// and their transposes).
template <class T, int D, int NT>
__device__ __forceinline__ void score_product(float (*x)[4], const uint16_t* a_tile,
                                              const uint16_t* b_tile, int r0, Lane l) {
  constexpr int ld = D + kPad;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    uint32_t a[4];
    load_a(a, a_tile, ld, r0, ks * 16, l);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      uint32_t b[2];
      load_b_nk(b, b_tile, ld, nt * 8, ks * 16, l);
      mma(x[nt], a, b, T{});
    }
  }
}

// ---- the grid: the longest blocks first --------------------------------------------------
// Blocks start in blockIdx order, x fastest. Under the causal mask a query tile's work grows
// with its index and a key tile's shrinks, so the grid is (sample x head, tile) and tiles are
// numbered from the long end: every head's longest tiles start first and the short ones fill
// the tail (longest-processing-time-first scheduling).

/// The (sample, query head) of block column blockIdx.x = b * NH + h.
__device__ __forceinline__ HeadView grid_head_view(int sequence, int heads, int kv_heads, int head_size) {
  const int bh = static_cast<int>(blockIdx.x);
  return head_view(bh / heads, bh % heads, sequence, heads, kv_heads, head_size);
}

/// The dropout mask row of query 0 of block column blockIdx.x = b * NH + h.
__device__ __forceinline__ uint64_t grid_mask_row(const kmath::AttentionDropoutScalars& drop,
                                                  int sequence, int heads) {
  const int bh = static_cast<int>(blockIdx.x);
  return kmath::attention_head_row(drop, bh / heads, bh % heads, sequence);
}

/// The query tile of block row blockIdx.y: the last tile (the most keys) first.
__device__ __forceinline__ int longest_first_query_tile() {
  return static_cast<int>(gridDim.y - 1 - blockIdx.y);
}

/// Copies rows first..first+rows-1 (16-byte vectors; rows past the sequence are zeros) of a
/// (T, stride)-strided matrix whose row 0 starts at src into a padded shared tile.
template <int D>
__device__ void load_tile(uint16_t* tile, const uint16_t* src, int stride, int first, int rows,
                          int sequence) {
  constexpr int chunks = D / 8;
    for (int e = static_cast<int>(threadIdx.x); e < rows * chunks; e += kThreads) {
    const int r = e / chunks, c = e % chunks;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (first + r < sequence)
      v = *reinterpret_cast<const uint4*>(src + static_cast<std::size_t>(first + r) * stride + c * 8);
    *reinterpret_cast<uint4*>(tile + r * (D + kPad) + c * 8) = v;
  }
}

/// Rows first.. of lse (times log2 e) and delta into shared arrays (0 past the sequence).
__device__ void load_row_stats(float* lse_log2, float* delta_s, const float* lse, const float* delta,
                               int first, int rows, int sequence) {
  for (int r = static_cast<int>(threadIdx.x); r < rows; r += kThreads) {
    const bool exists = first + r < sequence;
    lse_log2[r] = exists ? lse[first + r] * kmath::kLog2e : 0.0f;
    delta_s[r] = exists ? delta[first + r] : 0.0f;
  }
}

/// Adds scale * acc (a warp's 16 rows x D accumulator, rows first_row + r0..) into the T matrix
/// at dst (row stride `stride`), skipping rows past the sequence.
template <class T, int D>
__device__ void add_rows(T* dst, int stride, const float (*acc)[4], int first_row, int sequence,
                         float scale, Lane l) {
  #pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = first_row + l.g + 8 * half;
    if (row >= sequence) continue;
    T* p = dst + static_cast<std::size_t>(row) * stride;
    #pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = dt * 8 + 2 * l.t + e;
        p[col] = from_float<T>(to_float(p[col]) + scale * acc[dt][2 * half + e]);
      }
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_forward_kernel(T* out, float* lse, const T* qkv,
                                                                 int sequence, int heads,
                                                                 int kv_heads, float scale_log2,
                                                                 kmath::AttentionDropoutScalars drop) {
  constexpr int ld = D + kPad, key_tiles_n = kBlockRows / 8;
  extern __shared__ uint4 shared_raw[];
  uint16_t* q_s = reinterpret_cast<uint16_t*>(shared_raw);
  uint16_t* k_s = q_s + kBlockRows * ld;
  uint16_t* v_s = k_s + kBlockRows * ld;
  const HeadView hv = grid_head_view(sequence, heads, kv_heads, D);
  const uint16_t* base = reinterpret_cast<const uint16_t*>(qkv);
  const int qt = longest_first_query_tile(), q_first = qt * kBlockRows;
  const Lane l = this_lane();
  const int r0 = l.warp * kRowsPerWarp;
  load_tile<D>(q_s, base + hv.q, hv.qkv_stride, q_first, kBlockRows, sequence);
  const uint64_t mask_row0 = grid_mask_row(drop, sequence, heads);

  float o[D / 8][4] = {};
  kmath::SoftmaxRow row[2];  // rows g and g + 8 of the warp's 16 (this thread's partial sums)
  const int key_tiles = kmath::causal_key_tiles(qt, kBlockRows, kBlockRows, sequence);
  for (int kt = 0; kt < key_tiles; ++kt) {
    __syncthreads();  // the previous tile is consumed
    load_tile<D>(k_s, base + hv.k, hv.qkv_stride, kt * kBlockRows, kBlockRows, sequence);
    load_tile<D>(v_s, base + hv.v, hv.qkv_stride, kt * kBlockRows, kBlockRows, sequence);
    __syncthreads();
    float s[key_tiles_n][4] = {};
    score_product<T, D, key_tiles_n>(s, q_s, k_s, r0, l);  // S = Q K^T
    const bool masked = kmath::tile_needs_mask(qt, kBlockRows, kt, kBlockRows, sequence);
    float tile_max[2] = {-INFINITY, -INFINITY};
    #pragma unroll
    for (int nt = 0; nt < key_tiles_n; ++nt)
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int half = e / 2;
        const int query = q_first + r0 + l.g + 8 * half, key = kt * kBlockRows + nt * 8 + 2 * l.t + (e & 1);
        float x = s[nt][e] * scale_log2;
        if (masked && !kmath::score_visible(query, key, sequence)) x = -INFINITY;
        s[nt][e] = x;
        tile_max[half] = fmaxf(tile_max[half], x);
      }
    float factor[2];
    #pragma unroll
    for (int half = 0; half < 2; ++half) {  // the 4 lanes of a row hold its 64 columns
      tile_max[half] = fmaxf(tile_max[half], __shfl_xor_sync(0xffffffffu, tile_max[half], 1));
      tile_max[half] = fmaxf(tile_max[half], __shfl_xor_sync(0xffffffffu, tile_max[half], 2));
      factor[half] = kmath::softmax_row_rescale(row[half], tile_max[half]);
    }
    #pragma unroll
    for (int nt = 0; nt < key_tiles_n; ++nt)
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = kmath::softmax_row_weight(row[e / 2], s[nt][e]);
        const int query = q_first + r0 + l.g + 8 * (e / 2), key = kt * kBlockRows + nt * 8 + 2 * l.t + (e & 1);
        s[nt][e] = p * kmath::dropout_factor(drop.mask, mask_row0 + query, key);  // what meets V
        row[e / 2].sum += p;
      }
    #pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      #pragma unroll
      for (int e = 0; e < 4; ++e) o[dt][e] *= factor[e / 2];
    accumulate_product<T, D, kBlockRows>(o, s, v_s, l);  // O += P V
  }
  #pragma unroll
  for (int half = 0; half < 2; ++half) {
    row[half].sum += __shfl_xor_sync(0xffffffffu, row[half].sum, 1);
    row[half].sum += __shfl_xor_sync(0xffffffffu, row[half].sum, 2);
    const int query = q_first + r0 + l.g + 8 * half;
    if (query >= sequence) continue;
    const float inverse = 1.0f / row[half].sum;
    T* dst = out + hv.out + static_cast<std::size_t>(query) * hv.out_stride;
    #pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      #pragma unroll
      for (int e = 0; e < 2; ++e) dst[dt * 8 + 2 * l.t + e] = from_float<T>(o[dt][2 * half + e] * inverse);
    if (l.t == 0) lse[hv.stats + query] = kmath::softmax_row_logsumexp(row[half]);
  }
}

/// The backward kernels' shared memory, in order: two tiles of the block's own `fixed` rows
/// (loaded once), two of `streamed` rows (loaded per step), then `stats` lse and delta values.
struct BackwardShared {
  uint16_t *fixed1, *fixed2, *streamed1, *streamed2;
  float *lse, *delta;
};
template <int D>
__device__ __forceinline__ BackwardShared carve_backward_shared(uint4* raw, int fixed, int streamed,
                                                                int stats) {
  constexpr int ld = D + kPad;
  uint16_t* fixed1 = reinterpret_cast<uint16_t*>(raw);
  uint16_t* streamed1 = fixed1 + 2 * fixed * ld;
  float* lse = reinterpret_cast<float*>(streamed1 + 2 * streamed * ld);
  return {fixed1, fixed1 + fixed * ld, streamed1, streamed1 + streamed * ld, lse, lse + stats};
}
template <int D>
constexpr std::size_t backward_shared_bytes(int fixed, int streamed, int stats) {
  return static_cast<std::size_t>(2 * fixed + 2 * streamed) * (D + kPad) * 2u +
         2u * static_cast<std::size_t>(stats) * sizeof(float);
}

/// dq of a 64-query tile: for each visible key tile, S = Q K^T and dP = dout V^T recomputed,
/// dS = P (dP - D), dq += dS K; dq is added (times the score scale) into dqkv's query columns.
template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_dq_kernel(T* dqkv, const T* dout, const T* qkv,
                                                            const float* lse, const float* delta,
                                                            int sequence, int heads, int kv_heads,
                                                            float scale, float scale_log2,
                                                            kmath::AttentionDropoutScalars drop) {
  constexpr int key_tiles_n = kBlockRows / 8;
  extern __shared__ uint4 shared_raw[];
  const BackwardShared sh = carve_backward_shared<D>(shared_raw, kBlockRows, kBlockRows, kBlockRows);
  uint16_t *q_s = sh.fixed1, *do_s = sh.fixed2, *k_s = sh.streamed1, *v_s = sh.streamed2;
  float *lse_s = sh.lse, *delta_s = sh.delta;
  const HeadView hv = grid_head_view(sequence, heads, kv_heads, D);
  const uint16_t* base = reinterpret_cast<const uint16_t*>(qkv);
  const int qt = longest_first_query_tile(), q_first = qt * kBlockRows;
  const Lane l = this_lane();
  const int r0 = l.warp * kRowsPerWarp;
  load_tile<D>(q_s, base + hv.q, hv.qkv_stride, q_first, kBlockRows, sequence);
  load_tile<D>(do_s, reinterpret_cast<const uint16_t*>(dout) + hv.out, hv.out_stride, q_first,
               kBlockRows, sequence);
  load_row_stats(lse_s, delta_s, lse + hv.stats, delta + hv.stats, q_first, kBlockRows, sequence);
  const uint64_t mask_row0 = grid_mask_row(drop, sequence, heads);

  float dq[D / 8][4] = {};
  const int key_tiles = kmath::causal_key_tiles(qt, kBlockRows, kBlockRows, sequence);
  for (int kt = 0; kt < key_tiles; ++kt) {
    __syncthreads();
    load_tile<D>(k_s, base + hv.k, hv.qkv_stride, kt * kBlockRows, kBlockRows, sequence);
    load_tile<D>(v_s, base + hv.v, hv.qkv_stride, kt * kBlockRows, kBlockRows, sequence);
    __syncthreads();
    float s[key_tiles_n][4] = {}, dp[key_tiles_n][4] = {};
    score_product<T, D, key_tiles_n>(s, q_s, k_s, r0, l);    // S = Q K^T
    score_product<T, D, key_tiles_n>(dp, do_s, v_s, r0, l);  // dP = dO V^T
    const bool masked = kmath::tile_needs_mask(qt, kBlockRows, kt, kBlockRows, sequence);
    #pragma unroll
    for (int nt = 0; nt < key_tiles_n; ++nt)
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = r0 + l.g + 8 * (e / 2);
        const int key = kt * kBlockRows + nt * 8 + 2 * l.t + (e & 1);
        const bool visible = !masked || kmath::score_visible(q_first + r, key, sequence);
        const float p = visible ? kmath::recomputed_probability(s[nt][e] * scale_log2, lse_s[r]) : 0.0f;
        const float z = kmath::dropout_factor(drop.mask, mask_row0 + q_first + r, key);
        s[nt][e] = kmath::score_gradient(p, z * dp[nt][e], delta_s[r]);
      }
    accumulate_product<T, D, kBlockRows>(dq, s, k_s, l);  // dq += dS K
  }
  add_rows<T, D>(dqkv + hv.q, hv.qkv_stride, dq, q_first + r0, sequence, scale, l);
}

/// dk, dv of a 64-key tile of key/value head blockIdx.x % KV: over its query heads in order and
/// each head's query tiles at or after the key tile, S^T = K Q^T and dP^T = V dout^T recomputed,
/// dv += P^T dout, dk += dS^T Q; added (dk times the score scale) into dqkv's key/value columns.
template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_dkv_kernel(T* dqkv, const T* dout, const T* qkv,
                                                             const float* lse, const float* delta,
                                                             int sequence, int heads, int kv_heads,
                                                             float scale, float scale_log2,
                                                             kmath::AttentionDropoutScalars drop) {
  constexpr int bq = kDkvQueryRows<D>, query_tiles_n = bq / 8;
  extern __shared__ uint4 shared_raw[];
  const BackwardShared sh = carve_backward_shared<D>(shared_raw, kBlockRows, bq, bq);
  uint16_t *k_s = sh.fixed1, *v_s = sh.fixed2, *q_s = sh.streamed1, *do_s = sh.streamed2;
  float *lse_s = sh.lse, *delta_s = sh.delta;
  const int b = static_cast<int>(blockIdx.x) / kv_heads, kv = static_cast<int>(blockIdx.x) % kv_heads;
  const int group = heads / kv_heads;
  const HeadView kv_view = head_view(b, kv * group, sequence, heads, kv_heads, D);
  const uint16_t* base = reinterpret_cast<const uint16_t*>(qkv);
  const uint16_t* dout_base = reinterpret_cast<const uint16_t*>(dout);
  const int kt = static_cast<int>(blockIdx.y), k_first = kt * kBlockRows;  // tile 0 is the longest
  const Lane l = this_lane();
  const int r0 = l.warp * kRowsPerWarp;
  load_tile<D>(k_s, base + kv_view.k, kv_view.qkv_stride, k_first, kBlockRows, sequence);
  load_tile<D>(v_s, base + kv_view.v, kv_view.qkv_stride, k_first, kBlockRows, sequence);

  float dk[D / 8][4] = {}, dv[D / 8][4] = {};
  const int query_tiles = (sequence + bq - 1) / bq;
  for (int h = kv * group; h < (kv + 1) * group; ++h) {
    const HeadView hv = head_view(b, h, sequence, heads, kv_heads, D);
    const uint64_t mask_row0 = kmath::attention_head_row(drop, b, h, sequence);
    for (int qt = kmath::causal_first_query_tile(kt, kBlockRows, bq); qt < query_tiles; ++qt) {
      __syncthreads();
      load_tile<D>(q_s, base + hv.q, hv.qkv_stride, qt * bq, bq, sequence);
      load_tile<D>(do_s, dout_base + hv.out, hv.out_stride, qt * bq, bq, sequence);
      load_row_stats(lse_s, delta_s, lse + hv.stats, delta + hv.stats, qt * bq, bq, sequence);
      __syncthreads();
      float s[query_tiles_n][4] = {}, dp[query_tiles_n][4] = {};
      score_product<T, D, query_tiles_n>(s, k_s, q_s, r0, l);    // S^T = K Q^T
      score_product<T, D, query_tiles_n>(dp, v_s, do_s, r0, l);  // dP^T = V dO^T
      const bool masked = kmath::tile_needs_mask(qt, bq, kt, kBlockRows, sequence);
      #pragma unroll
      for (int nt = 0; nt < query_tiles_n; ++nt)
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k_first + r0 + l.g + 8 * (e / 2);
          const int c = nt * 8 + 2 * l.t + (e & 1);
          const bool visible = !masked || kmath::score_visible(qt * bq + c, key, sequence);
          const float p = visible ? kmath::recomputed_probability(s[nt][e] * scale_log2, lse_s[c]) : 0.0f;
          const float z = kmath::dropout_factor(drop.mask, mask_row0 + qt * bq + c, key);
          s[nt][e] = p * z;
          dp[nt][e] = kmath::score_gradient(p, z * dp[nt][e], delta_s[c]);
        }
      accumulate_product<T, D, bq>(dv, s, do_s, l);  // dv += P^T dout
      accumulate_product<T, D, bq>(dk, dp, q_s, l);  // dk += dS^T Q
    }
  }
  add_rows<T, D>(dqkv + kv_view.k, kv_view.qkv_stride, dk, k_first + r0, sequence, scale, l);
  add_rows<T, D>(dqkv + kv_view.v, kv_view.qkv_stride, dv, k_first + r0, sequence, 1.0f, l);
}

template <int D>
constexpr std::size_t forward_shared_bytes() { return 3u * kBlockRows * (D + kPad) * 2u; }
template <int D>
constexpr std::size_t dq_shared_bytes() { return backward_shared_bytes<D>(kBlockRows, kBlockRows, kBlockRows); }
template <int D>
constexpr std::size_t dkv_shared_bytes() {
  return backward_shared_bytes<D>(kBlockRows, kDkvQueryRows<D>, kDkvQueryRows<D>);
}

/// Lets `kernel` take `bytes` of dynamic shared memory (past the 48 KiB default).
template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes) {
  WHALE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

float score_scale(int head_size) { return 1.0f / sqrtf(static_cast<float>(head_size)); }

unsigned ceil_tiles(int sequence, int rows) { return static_cast<unsigned>((sequence + rows - 1) / rows); }

template <class T, int D>
void forward_at(cudaStream_t stream, T* out, float* lse, const T* qkv, int batch, int sequence,
                int heads, int kv_heads, const kmath::AttentionDropoutScalars& drop) {
  constexpr std::size_t bytes = forward_shared_bytes<D>();
  allow_shared(flash_forward_kernel<T, D>, bytes);
  const dim3 grid(static_cast<unsigned>(batch * heads), ceil_tiles(sequence, kBlockRows));
  flash_forward_kernel<T, D><<<grid, kThreads, bytes, stream>>>(out, lse, qkv, sequence, heads, kv_heads,
                                                                score_scale(D) * kmath::kLog2e, drop);
  WHALE_CUDA_CHECK_LAUNCH();
}

template <class T, int D>
void backward_at(cudaStream_t stream, T* dqkv, const T* dout, const T* qkv, const float* lse,
                 const float* delta, int batch, int sequence, int heads, int kv_heads,
                 const kmath::AttentionDropoutScalars& drop) {
  const float scale = score_scale(D), scale_log2 = scale * kmath::kLog2e;
  constexpr std::size_t dq_bytes = dq_shared_bytes<D>(), dkv_bytes = dkv_shared_bytes<D>();
  allow_shared(flash_dq_kernel<T, D>, dq_bytes);
  allow_shared(flash_dkv_kernel<T, D>, dkv_bytes);
  const dim3 dq_grid(static_cast<unsigned>(batch * heads), ceil_tiles(sequence, kBlockRows));
  flash_dq_kernel<T, D><<<dq_grid, kThreads, dq_bytes, stream>>>(dqkv, dout, qkv, lse, delta, sequence,
                                                                 heads, kv_heads, scale, scale_log2, drop);
  WHALE_CUDA_CHECK_LAUNCH();
  const dim3 dkv_grid(static_cast<unsigned>(batch * kv_heads), ceil_tiles(sequence, kBlockRows));
  flash_dkv_kernel<T, D><<<dkv_grid, kThreads, dkv_bytes, stream>>>(dqkv, dout, qkv, lse, delta, sequence,
                                                                    heads, kv_heads, scale, scale_log2, drop);
  WHALE_CUDA_CHECK_LAUNCH();
}

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

template <class T>
bool flash_mma_supports(int head_size, const void* a, const void* b, const void* c) {
  constexpr bool half_width = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;
  return half_width && (head_size == 64 || head_size == 128) && aligned16(a) && aligned16(b) &&
         aligned16(c);
}

template <class T>
void flash_mma_forward(cudaStream_t stream, T* out, float* lse, const T* qkv, int batch,
                       int sequence, int heads, int kv_heads, int head_size,
                       const kmath::AttentionDropoutScalars& drop) {
  if (batch == 0 || sequence == 0 || heads == 0) return;
  if (head_size == 64)
    forward_at<T, 64>(stream, out, lse, qkv, batch, sequence, heads, kv_heads, drop);
  else
    forward_at<T, 128>(stream, out, lse, qkv, batch, sequence, heads, kv_heads, drop);
}

template <class T>
void flash_mma_backward(cudaStream_t stream, T* dqkv, const T* dout, const T* qkv,
                        const float* lse, const float* delta, int batch, int sequence, int heads,
                        int kv_heads, int head_size, const kmath::AttentionDropoutScalars& drop) {
  if (batch == 0 || sequence == 0 || heads == 0) return;
  if (head_size == 64)
    backward_at<T, 64>(stream, dqkv, dout, qkv, lse, delta, batch, sequence, heads, kv_heads, drop);
  else
    backward_at<T, 128>(stream, dqkv, dout, qkv, lse, delta, batch, sequence, heads, kv_heads, drop);
}

#define WHALE_INSTANTIATE_FLASH_MMA(T)                                                        \
  template bool flash_mma_supports<T>(int, const void*, const void*, const void*);           \
  template void flash_mma_forward<T>(cudaStream_t, T*, float*, const T*, int, int, int, int,  \
                                     int, const kmath::AttentionDropoutScalars&);              \
  template void flash_mma_backward<T>(cudaStream_t, T*, const T*, const T*, const float*,     \
                                      const float*, int, int, int, int, int,                   \
                                      const kmath::AttentionDropoutScalars&);
WHALE_INSTANTIATE_FLASH_MMA(__nv_bfloat16)
WHALE_INSTANTIATE_FLASH_MMA(__half)
template bool flash_mma_supports<float>(int, const void*, const void*, const void*);  // false

}  // namespace whale::exec::cuda

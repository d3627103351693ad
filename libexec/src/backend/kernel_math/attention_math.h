// File: attention_math.h
// The flash-attention recurrences of one query row (forward) and one query or key row
// (backward), over a tile of keys or queries at a time, shared by the CUDA kernels (tiles in
// shared memory, one thread per row) and the host tests (tiles read in place). Only the row's
// log-sum-exp is saved; backward recomputes the scores.
#pragma once

#include "backend/kernel_math/dropout_math.h"
#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// The largest head size the kernels hold per thread (registers/local memory).
constexpr int kMaxHeadSize = 128;
/// Keys (forward, dq) or queries (dk, dv) per tile.
constexpr int kAttentionTile = 32;

/// The first row of tile `tile` and how many of the tile's rows exist (the last tile may be
/// short).
struct TileRows {
  int first, count;
};
WHALE_HOST_DEVICE TileRows tile_rows(int tile, int sequence) {
  const int first = tile * kAttentionTile;
  const int left = sequence - first;
  return {first, left < 0 ? 0 : (left < kAttentionTile ? left : kAttentionTile)};
}

/// Keys visible to query `query` within the key tile starting at `first_key` of `count` rows
/// (causal: key <= query): 0 when the tile lies in the query's future.
WHALE_HOST_DEVICE int causal_keys_in_tile(int query, int first_key, int count) {
  const int visible = query - first_key + 1;
  return visible < 0 ? 0 : (visible < count ? visible : count);
}

/// The queries of the tile starting at `first_query` of `count` rows that see key `key` (the
/// queries >= key): the first of them and how many.
WHALE_HOST_DEVICE TileRows causal_queries_in_tile(int key, int first_query, int count) {
  const int first = key > first_query ? key : first_query;
  const int left = first_query + count - first;
  return {first, left < 0 ? 0 : left};
}

/// The key/value head that query head h reads under grouped-query attention: each of the
/// kv_heads serves heads / kv_heads consecutive query heads (kv_heads == heads: itself).
WHALE_HOST_DEVICE int kv_head_of(int h, int heads, int kv_heads) { return h / (heads / kv_heads); }

WHALE_HOST_DEVICE float dot(const float* a, const float* b, int n) {
  float sum = 0.0f;
  for (int d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

/// One query row's running state: max and sum of exp(score - max), and the unnormalised output.
struct FlashRow {
  float max = -INFINITY;
  float sum = 0.0f;
  float acc[kMaxHeadSize];
};

WHALE_HOST_DEVICE void flash_row_init(FlashRow& row, int head_size) {
  row.max = -INFINITY;
  row.sum = 0.0f;
  for (int d = 0; d < head_size; ++d) row.acc[d] = 0.0f;
}

/// Folds in keys 0..count-1 of a tile (row j of k/v at k + j*stride, v + j*stride), all visible
/// to the query q (the caller cuts the tile at the causal limit): the tile's scores
/// scale * q.k_j, a new running max, the old sum and output rescaled by exp(old - new max),
/// then each key's exp(score - max) added to the sum and, times its dropout factor (mask row
/// `mask_row`, column first_key + j; 1 without dropout), to the output.
WHALE_HOST_DEVICE void flash_forward_tile(FlashRow& row, const float* q, const float* k,
                                          const float* v, int stride, int count, int head_size,
                                          float scale, const DropoutScalars& drop,
                                          uint64_t mask_row, int first_key) {
  float scores[kAttentionTile];
  float tile_max = -INFINITY;
  for (int j = 0; j < count; ++j) {
    scores[j] = scale * dot(q, k + j * stride, head_size);
    tile_max = scores[j] > tile_max ? scores[j] : tile_max;
  }
  if (count == 0) return;
  const float new_max = tile_max > row.max ? tile_max : row.max;
  const float rescale = expf(row.max - new_max);  // 0 on the first tile
  row.sum *= rescale;
  for (int d = 0; d < head_size; ++d) row.acc[d] *= rescale;
  for (int j = 0; j < count; ++j) {
    const float p = expf(scores[j] - new_max);
    row.sum += p;
    const float kept = p * dropout_factor(drop, mask_row, static_cast<uint64_t>(first_key + j));
    const float* vj = v + j * stride;
    for (int d = 0; d < head_size; ++d) row.acc[d] += kept * vj[d];
  }
  row.max = new_max;
}

/// The row's output element d (acc / sum) and its log-sum-exp (max + log sum).
WHALE_HOST_DEVICE float flash_output(const FlashRow& row, int d) { return row.acc[d] / row.sum; }
WHALE_HOST_DEVICE float flash_logsumexp(const FlashRow& row) { return row.max + logf(row.sum); }

/// The probability and score gradient of one (query, key) pair, recomputed from the score:
/// p = exp(score - lse); ds = p (z dp - delta) * scale, with dp = dout_q . v_k, z the pair's
/// dropout factor (1 without dropout; the gradient reaches the probability through the mask)
/// and delta = dout_q . out_q (out_q already the dropped output). kept = z p is what the
/// forward multiplied v_k by.
struct ScoreGrad {
  float p, kept, ds;
};
WHALE_HOST_DEVICE ScoreGrad score_grad(float score, float lse, float dp, float delta, float scale,
                                       float factor) {
  const float p = expf(score - lse);
  return {p, p * factor, p * (factor * dp - delta) * scale};
}

/// dq (head_size) += sum over the tile's keys of ds * k_j, for query q with saved lse and
/// delta, its output gradient dout, keys/values row j at k/v + j*stride (visible keys only);
/// key j's dropout factor at mask row `mask_row`, column first_key + j.
WHALE_HOST_DEVICE void flash_backward_dq_tile(float* dq, const float* q, const float* dout,
                                              float lse, float delta, const float* k,
                                              const float* v, int stride, int count,
                                              int head_size, float scale,
                                              const DropoutScalars& drop, uint64_t mask_row,
                                              int first_key) {
  for (int j = 0; j < count; ++j) {
    const float* kj = k + j * stride;
    const ScoreGrad g = score_grad(scale * dot(q, kj, head_size), lse,
                                   dot(dout, v + j * stride, head_size), delta, scale,
                                   dropout_factor(drop, mask_row, static_cast<uint64_t>(first_key + j)));
    for (int d = 0; d < head_size; ++d) dq[d] += g.ds * kj[d];
  }
}

/// dk, dv (head_size) of key k / value v += the tile's queries' terms: dv += z p * dout_i,
/// dk += ds * q_i; query row i at q/dout + i*stride with lse[i], delta[i] (queries that see
/// the key only); query i's dropout factor at mask row first_mask_row + i, column `key`.
WHALE_HOST_DEVICE void flash_backward_dkv_tile(float* dk, float* dv, const float* k,
                                               const float* v, const float* q,
                                               const float* dout, const float* lse,
                                               const float* delta, int stride, int count,
                                               int head_size, float scale,
                                               const DropoutScalars& drop,
                                               uint64_t first_mask_row, int key) {
  for (int i = 0; i < count; ++i) {
    const float* qi = q + i * stride;
    const float* doi = dout + i * stride;
    const ScoreGrad g = score_grad(scale * dot(qi, k, head_size), lse[i],
                                   dot(doi, v, head_size), delta[i], scale,
                                   dropout_factor(drop, first_mask_row + static_cast<uint64_t>(i),
                                                  static_cast<uint64_t>(key)));
    for (int d = 0; d < head_size; ++d) {
      dv[d] += g.kept * doi[d];
      dk[d] += g.ds * qi[d];
    }
  }
}

}  // namespace whale::exec::kmath

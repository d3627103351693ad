// File: flash_tile_math.h
// The tile-level arithmetic of the tensor-core flash attention (FlashAttention-2's blocking):
// which (query tile, key tile) pairs a causal pass visits and which of them need a mask, the
// online-softmax merge of one key tile into a query row (scores in log2 units, exp2), the
// backward's recomputed probability and dS = P * (dP - D). Shared by the CUDA kernels and the
// host tests, which run the same tiled algorithm against a naive attention.
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// log2(e): scores are multiplied by scale * log2(e) so that exp(x) becomes exp2(x * log2(e)).
constexpr float kLog2e = 1.4426950408889634f;

/// Key tiles a causal pass over query tile `query_tile` (query_rows rows per tile) visits with
/// key_rows keys per tile: tiles 0 .. n-1 cover keys 0 .. the tile's last existing query.
WHALE_HOST_DEVICE int causal_key_tiles(int query_tile, int query_rows, int key_rows,
                                       int sequence) {
  const int end = (query_tile + 1) * query_rows < sequence ? (query_tile + 1) * query_rows : sequence;
  return end <= query_tile * query_rows ? 0 : (end - 1) / key_rows + 1;
}

/// The first query tile whose queries see any key of key tile `key_tile` (causal: query >= key).
WHALE_HOST_DEVICE int causal_first_query_tile(int key_tile, int key_rows, int query_rows) {
  return key_tile * key_rows / query_rows;
}

/// True when query `query` sees key `key`: causal (key <= query) and the query exists (which
/// makes the key exist too).
WHALE_HOST_DEVICE bool score_visible(int query, int key, int sequence) {
  return key <= query && query < sequence;
}

/// True when some (query, key) pair of the tile pair is not visible, so the tile needs the
/// per-element mask; false when every pair is (keys all at or before the first query, and every
/// query row exists).
WHALE_HOST_DEVICE bool tile_needs_mask(int query_tile, int query_rows, int key_tile,
                                       int key_rows, int sequence) {
  const int first_query = query_tile * query_rows, last_query = first_query + query_rows - 1;
  const int last_key = (key_tile + 1) * key_rows - 1;
  return last_query >= sequence || last_key > first_query;
}

/// One query row's running softmax state: the largest score seen (log2 units) and the sum of
/// exp2(score - max) over the scores seen (on the GPU each thread holds a partial sum over its
/// columns; the partial sums share the max and add up at the end).
struct SoftmaxRow {
  float max_log2 = -INFINITY;
  float sum = 0.0f;
};

/// Merges a key tile whose largest (masked) score is tile_max_log2 into the row: the max rises
/// to cover it and the factor exp2(old max - new max) (0 on the first tile, 1 while every score
/// seen is masked) rescales the sum, here, and the output accumulator, by the caller.
WHALE_HOST_DEVICE float softmax_row_rescale(SoftmaxRow& row, float tile_max_log2) {
  const float new_max = tile_max_log2 > row.max_log2 ? tile_max_log2 : row.max_log2;
  const float factor = new_max == -INFINITY ? 1.0f : exp2f(row.max_log2 - new_max);
  row.sum *= factor;
  row.max_log2 = new_max;
  return factor;
}

/// The unnormalised probability exp2(score - max) of a score in log2 units after the rescale
/// (a masked score is -inf, so 0; 0 too while the row has seen only masked scores).
WHALE_HOST_DEVICE float softmax_row_weight(const SoftmaxRow& row, float score_log2) {
  return row.max_log2 == -INFINITY ? 0.0f : exp2f(score_log2 - row.max_log2);
}

/// The row's natural log-sum-exp of the scaled scores, from the final max and total sum.
WHALE_HOST_DEVICE float softmax_row_logsumexp(const SoftmaxRow& row) {
  return (row.max_log2 + log2f(row.sum)) / kLog2e;
}

/// Backward: the probability recomputed from a score in log2 units and the row's saved
/// log-sum-exp times log2(e).
WHALE_HOST_DEVICE float recomputed_probability(float score_log2, float lse_log2) {
  return exp2f(score_log2 - lse_log2);
}

/// Backward: the gradient of the scaled score, dS = P * (dP - D), with dP = dout_q . v_k and
/// D = rowsum(dout_q * out_q) (dQ = scale * dS K, dK = scale * dS^T Q).
WHALE_HOST_DEVICE float score_gradient(float p, float dp, float delta) { return p * (dp - delta); }

}  // namespace whale::exec::kmath

// File: vocabulary_parallel.h
// Private: Megatron-LM's vocabulary-parallel embedding and cross-entropy, as a tensor-parallel
// stage runs them. Tensor rank r of t holds rows [r*V/t, (r+1)*V/t) of the token table and of
// the LM head (sizes differ by one at most, and none is empty while t <= V). The embedding
// looks up the tokens its rows hold (the others add nothing) and the ranks' partial rows are
// summed; the head computes its slice of the logits, and the loss comes from each slice's
// softmax statistics, gathered and combined here on the host, so no rank holds all the logits.
#pragma once

#include <cstdint>
#include <vector>

namespace whale::exec {

/// The token rows [first, first + count) one tensor rank holds.
struct VocabularyShard {
  int first = 0;
  int count = 0;
};

/// The rows rank `tp_rank` of `tp_size` holds of a vocabulary of `vocabulary` tokens. Throws
/// std::invalid_argument when tp_size exceeds the vocabulary (a rank would hold no row).
VocabularyShard vocabulary_shard(int vocabulary, int tp_rank, int tp_size);

/// `tokens` as rows of `shard`: token - shard.first where the shard holds it, -1 where another
/// rank does (the backends' embedding and shard cross-entropy skip negative indices). Throws
/// std::out_of_range for a token outside [0, vocabulary).
std::vector<int32_t> shard_token_rows(const std::vector<int32_t>& tokens, int vocabulary,
                                      VocabularyShard shard);

/// Floats per row of Backend::cross_entropy_shard_statistics: the shard's max logit, the sum
/// of exp(logit - max) over the shard as a float and its remainder (hi, lo: a double in two
/// floats), and the target's logit (0 where the shard does not hold the target).
constexpr int kShardStatisticsFloats = 4;
/// Floats per row of the log-sum-exp the shard backward reads: hi, lo.
constexpr int kLogSumExpFloats = 2;

/// Combines the statistics of every shard, `gathered` (shards, rows, kShardStatisticsFloats)
/// in shard order: returns the loss summed over the rows (rows in order, in double) and writes
/// each row's log-sum-exp over the whole vocabulary into `log_sum_exp` (rows,
/// kLogSumExpFloats). The same figures, to rounding, as the softmax of the whole row.
double combine_shard_statistics(const std::vector<float>& gathered, int shards, int rows,
                                std::vector<float>* log_sum_exp);

}  // namespace whale::exec

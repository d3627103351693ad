// File: vocabulary_parallel.cpp
// The vocabulary's split over the tensor ranks, token rows per shard, and the host combination
// of the shards' softmax statistics into the loss and each row's log-sum-exp.
#include "model/vocabulary_parallel.h"

#include "backend/kernel_math/float_round.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace whale::exec {

VocabularyShard vocabulary_shard(int vocabulary, int tp_rank, int tp_size) {
  if (tp_size < 1 || tp_rank < 0 || tp_rank >= tp_size)
    throw std::invalid_argument("vocabulary_shard: tensor rank " + std::to_string(tp_rank) +
                                " of " + std::to_string(tp_size));
  if (tp_size > vocabulary)
    throw std::invalid_argument("a vocabulary of " + std::to_string(vocabulary) +
                                " tokens split over " + std::to_string(tp_size) +
                                " tensor-parallel ranks leaves a rank without a token row; "
                                "use a tp of at most the vocabulary size");
  const auto begin = [&](int rank) {
    return static_cast<int>(static_cast<long long>(vocabulary) * rank / tp_size);
  };
  return {begin(tp_rank), begin(tp_rank + 1) - begin(tp_rank)};
}

std::vector<int32_t> shard_token_rows(const std::vector<int32_t>& tokens, int vocabulary,
                                      VocabularyShard shard) {
  std::vector<int32_t> rows(tokens.size());
  for (std::size_t n = 0; n < tokens.size(); ++n) {
    const int32_t token = tokens[n];
    if (token < 0 || token >= vocabulary)
      throw std::out_of_range("token " + std::to_string(token) + " outside vocabulary 0.." +
                              std::to_string(vocabulary - 1));
    const int32_t row = token - shard.first;
    rows[n] = row >= 0 && row < shard.count ? row : -1;
  }
  return rows;
}

double combine_shard_statistics(const std::vector<float>& gathered, int shards, int rows,
                                std::vector<float>* log_sum_exp) {
  const std::size_t per_shard = static_cast<std::size_t>(rows) * kShardStatisticsFloats;
  if (shards < 1 || gathered.size() != per_shard * static_cast<std::size_t>(shards))
    throw std::invalid_argument("combine_shard_statistics: " + std::to_string(gathered.size()) +
                                " floats for " + std::to_string(shards) + " shards of " +
                                std::to_string(rows) + " rows");
  log_sum_exp->assign(static_cast<std::size_t>(rows) * kLogSumExpFloats, 0.0f);
  double total = 0.0;
  for (int r = 0; r < rows; ++r) {
    const auto at = [&](int shard, int field) {
      return gathered[static_cast<std::size_t>(shard) * per_shard +
                      static_cast<std::size_t>(r) * kShardStatisticsFloats + field];
    };
    float max_logit = at(0, 0);
    for (int k = 1; k < shards; ++k) max_logit = std::max(max_logit, at(k, 0));
    double sum = 0.0, target_logit = 0.0;
    for (int k = 0; k < shards; ++k) {
      const double shard_sum = static_cast<double>(at(k, 1)) + at(k, 2);
      sum += shard_sum * std::exp(static_cast<double>(at(k, 0)) - max_logit);
      target_logit += at(k, 3);
    }
    const double lse = max_logit + std::log(sum);
    kmath::split_double(lse, &(*log_sum_exp)[static_cast<std::size_t>(r) * kLogSumExpFloats],
                 &(*log_sum_exp)[static_cast<std::size_t>(r) * kLogSumExpFloats + 1]);
    total += lse - target_logit;
  }
  return total;
}

}  // namespace whale::exec

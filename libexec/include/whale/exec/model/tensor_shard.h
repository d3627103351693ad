// File: tensor_shard.h
// TensorShard: where a tensor-parallel shard of a parameter sits in the full tensor, so that
// full tensors can be split into shards (initialisation) and shards reassembled (tests,
// checkpoint comparisons). gpt_parameter_shard and parameter_shard give it for every parameter.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "whale/plan/model.h"

namespace whale::exec {

/// The full tensor is (rows, cols), row-major (a vector is (n, 1)). The shard is the
/// concatenation of `ranges` [begin, end) taken along `split_dim` (0: rows, 1: columns), in
/// order; with no ranges the shard is the whole tensor (replicated on every tp rank).
struct TensorShard {
  std::size_t rows = 0;
  std::size_t cols = 1;
  int split_dim = 0;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;

  std::size_t full_count() const { return rows * cols; }
  std::size_t shard_count() const;
  bool replicated() const { return ranges.empty(); }
};

/// shard (shard_count) = this shard's elements of full (full_count).
void extract_shard(const TensorShard& layout, const float* full, float* shard);
/// Writes this shard's elements into their places in full.
void insert_shard(const TensorShard& layout, const float* shard, float* full);
/// The index in the full tensor of each of the shard's elements, in shard order (shard_count).
std::vector<std::size_t> shard_full_indices(const TensorShard& layout);

/// The layout of GPT parameter `name` (a name of StageModule::parameters(), e.g.
/// "layers.3.attn.qkv.weight") on tp rank `tp_rank` of `tp_size`. Throws std::invalid_argument
/// for a name the GPT does not have.
TensorShard gpt_parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                                int tp_size);
/// The same for a parameter of any family whale-run trains (gpt, llama).
TensorShard parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                            int tp_size);

}  // namespace whale::exec

// File: tensor_shard.cpp
// Copies between a tensor-parallel shard and its places in the full tensor.
#include <algorithm>

#include "whale/exec/model/tensor_shard.h"

namespace whale::exec {
namespace {

/// Calls copy(full_offset, shard_offset, length) for every contiguous run of the shard.
template <class Copy>
void for_each_run(const TensorShard& s, Copy copy) {
  if (s.ranges.empty()) {
    copy(std::size_t{0}, std::size_t{0}, s.full_count());
    return;
  }
  std::size_t shard_offset = 0;
  if (s.split_dim == 0) {
    for (const auto& [begin, end] : s.ranges) {
      copy(begin * s.cols, shard_offset, (end - begin) * s.cols);
      shard_offset += (end - begin) * s.cols;
    }
    return;
  }
  // Column split: the shard is (rows, sum of range widths); rows of the shard interleave ranges.
  for (std::size_t r = 0; r < s.rows; ++r)
    for (const auto& [begin, end] : s.ranges) {
      copy(r * s.cols + begin, shard_offset, end - begin);
      shard_offset += end - begin;
    }
}

}  // namespace

std::size_t TensorShard::shard_count() const {
  if (ranges.empty()) return full_count();
  std::size_t width = 0;
  for (const auto& [begin, end] : ranges) width += end - begin;
  return split_dim == 0 ? width * cols : rows * width;
}

void extract_shard(const TensorShard& layout, const float* full, float* shard) {
  for_each_run(layout, [&](std::size_t f, std::size_t s, std::size_t n) {
    std::copy(full + f, full + f + n, shard + s);
  });
}

void insert_shard(const TensorShard& layout, const float* shard, float* full) {
  for_each_run(layout, [&](std::size_t f, std::size_t s, std::size_t n) {
    std::copy(shard + s, shard + s + n, full + f);
  });
}

std::vector<std::size_t> shard_full_indices(const TensorShard& layout) {
  std::vector<std::size_t> indices(layout.shard_count());
  for_each_run(layout, [&](std::size_t f, std::size_t s, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) indices[s + i] = f + i;
  });
  return indices;
}

}  // namespace whale::exec

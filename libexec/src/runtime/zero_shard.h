// File: zero_shard.h
// Private: the ZeRO slicing of a stage's flattened parameters (and so of its flat gradient
// buffer) over the data-parallel replicas: ZeRO-1's optimizer shards, and the blocks into
// which ZeRO-2 reduce-scatters each gradient bucket, so that both agree element for element.
#pragma once

#include <cstddef>
#include <vector>

namespace whale::exec {

/// Member m of `members` owns the flat elements [begin, end) with begin = min(total, m * size)
/// and end = min(total, begin + size), size = ceil(total / members): equal shards, the last
/// ones short (or empty) when members do not divide total.
struct ZeroShard {
  std::size_t total = 0;
  std::size_t size = 0;   // elements per member, padded: the all-gather's block
  std::size_t begin = 0;  // this member's first element
  std::size_t end = 0;    // one past this member's last element

  std::size_t count() const { return end - begin; }
};

ZeroShard zero_shard(std::size_t total, int members, int member);

/// For the flat range [begin, begin + count) of `total` elements: per member, how many of its
/// elements lie in that member's shard, in member order (Communicator::start_reduce_scatter_sum's
/// counts; they sum to count, since shards are contiguous in member order).
std::vector<std::size_t> zero_block_counts(std::size_t total, int members, std::size_t begin,
                                           std::size_t count);

}  // namespace whale::exec

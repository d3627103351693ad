// File: zero_shard.cpp
// The ZeRO slicing of flat parameters and gradients over data-parallel replicas.
#include "runtime/zero_shard.h"

#include <algorithm>

namespace whale::exec {

ZeroShard zero_shard(std::size_t total, int members, int member) {
  ZeroShard s;
  s.total = total;
  s.size = (total + members - 1) / members;
  s.begin = std::min(total, s.size * static_cast<std::size_t>(member));
  s.end = std::min(total, s.begin + s.size);
  return s;
}

std::vector<std::size_t> zero_block_counts(std::size_t total, int members, std::size_t begin,
                                           std::size_t count) {
  std::vector<std::size_t> counts;
  for (int m = 0; m < members; ++m) {
    const ZeroShard s = zero_shard(total, members, m);
    const std::size_t lo = std::max(begin, s.begin), hi = std::min(begin + count, s.end);
    counts.push_back(lo < hi ? hi - lo : 0);
  }
  return counts;
}

}  // namespace whale::exec

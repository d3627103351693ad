// File: arena_layout.cpp
// First-fit aligned sub-allocation with coalescing (see arena_layout.h).
#include "backend/gpu_host/arena_layout.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

namespace whale::exec::gpu {

ArenaLayout::ArenaLayout(std::size_t capacity_bytes, std::size_t alignment_bytes)
    : alignment_bytes_(alignment_bytes),
      capacity_bytes_(capacity_bytes / alignment_bytes * alignment_bytes) {
  if (alignment_bytes == 0 || (alignment_bytes & (alignment_bytes - 1)) != 0)
    throw std::invalid_argument("arena alignment " + std::to_string(alignment_bytes) +
                                " is not a power of two");
  if (capacity_bytes_ > 0) free_[0] = capacity_bytes_;
}

std::size_t ArenaLayout::allocate(std::size_t bytes) {
  const std::size_t size =
      std::max<std::size_t>(1, (bytes + alignment_bytes_ - 1) / alignment_bytes_) * alignment_bytes_;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const std::size_t offset = it->first;
    const std::size_t left = it->second - size;
    free_.erase(it);
    if (left > 0) free_[offset + size] = left;
    live_[offset] = size;
    used_bytes_ += size;
    peak_bytes_ = std::max(peak_bytes_, used_bytes_);
    return offset;
  }
  throw std::runtime_error("device memory arena: no room for " + std::to_string(bytes) +
                           " bytes (" + std::to_string(used_bytes_) + " of " +
                           std::to_string(capacity_bytes_) +
                           " bytes in use); give the arena more memory or shrink the micro-batch");
}

void ArenaLayout::release(std::size_t offset) {
  const auto live = live_.find(offset);
  if (live == live_.end())
    throw std::invalid_argument("device memory arena: no live block at offset " +
                                std::to_string(offset));
  std::size_t start = offset, size = live->second;
  used_bytes_ -= size;
  live_.erase(live);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = size;
}

std::size_t ArenaLayout::block_bytes(std::size_t offset) const {
  const auto live = live_.find(offset);
  if (live == live_.end())
    throw std::invalid_argument("device memory arena: no live block at offset " +
                                std::to_string(offset));
  return live->second;
}

}  // namespace whale::exec::gpu

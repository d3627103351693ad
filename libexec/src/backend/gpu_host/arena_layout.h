// File: arena_layout.h
// The sub-allocator of a rank's device memory arena (one cudaMalloc up front): aligned
// first-fit over offsets, neighbours coalesced on release, the peak of bytes in use tracked.
// Pure host bookkeeping; the CUDA backend adds the base pointer.
#pragma once

#include <cstddef>
#include <map>

namespace whale::exec::gpu {

class ArenaLayout {
 public:
  /// Blocks start on multiples of `alignment_bytes` (a power of two); capacity is rounded down
  /// to it.
  ArenaLayout(std::size_t capacity_bytes, std::size_t alignment_bytes = 256);

  /// The offset of a new block of `bytes` (rounded up to the alignment; 0 bytes takes one
  /// alignment unit), the lowest that fits. Throws std::runtime_error naming the request, the
  /// bytes in use and the capacity when none fits.
  std::size_t allocate(std::size_t bytes);
  /// Frees the block at `offset` (from allocate). Throws std::invalid_argument otherwise.
  void release(std::size_t offset);
  /// The size of the live block at `offset` as allocated (rounded).
  std::size_t block_bytes(std::size_t offset) const;

  std::size_t capacity_bytes() const { return capacity_bytes_; }
  std::size_t used_bytes() const { return used_bytes_; }
  std::size_t peak_bytes() const { return peak_bytes_; }
  std::size_t live_blocks() const { return live_.size(); }

 private:
  std::size_t alignment_bytes_, capacity_bytes_;
  std::size_t used_bytes_ = 0, peak_bytes_ = 0;
  std::map<std::size_t, std::size_t> free_;  // offset -> bytes, disjoint, never adjacent
  std::map<std::size_t, std::size_t> live_;  // offset -> bytes
};

}  // namespace whale::exec::gpu

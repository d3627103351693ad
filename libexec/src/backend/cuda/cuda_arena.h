// File: cuda_arena.h
// A rank's device memory arena: one cudaMalloc of a fixed capacity up front, sub-allocated by
// gpu::ArenaLayout (aligned first-fit, coalescing), the peak of bytes in use tracked.
#pragma once

#include <cstddef>

#include "backend/gpu_host/arena_layout.h"

namespace whale::exec::cuda {

class CudaArena {
 public:
  /// Allocates capacity_bytes on the current device. Blocks are 256-byte aligned (cuBLASLt
  /// and vector loads want at least 16).
  explicit CudaArena(std::size_t capacity_bytes);
  ~CudaArena();
  CudaArena(const CudaArena&) = delete;
  CudaArena& operator=(const CudaArena&) = delete;

  /// Device memory of `bytes`; throws std::runtime_error (naming the sizes) when full.
  void* allocate(std::size_t bytes);
  /// Frees a block from allocate; the caller orders it after the block's last use on the GPU
  /// (one stream, or a synchronisation).
  void release(void* block);

  std::size_t capacity_bytes() const { return layout_.capacity_bytes(); }
  std::size_t used_bytes() const { return layout_.used_bytes(); }
  std::size_t peak_bytes() const { return layout_.peak_bytes(); }

 private:
  char* base_ = nullptr;
  gpu::ArenaLayout layout_;
};

}  // namespace whale::exec::cuda

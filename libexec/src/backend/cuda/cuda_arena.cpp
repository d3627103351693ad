// File: cuda_arena.cpp
// The device memory arena (see cuda_arena.h).
#include "backend/cuda/cuda_arena.h"

#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"

namespace whale::exec::cuda {

CudaArena::CudaArena(std::size_t capacity_bytes) : layout_(capacity_bytes, 256) {
  void* base = nullptr;
  WHALE_CUDA_CHECK(cudaMalloc(&base, layout_.capacity_bytes()));
  base_ = static_cast<char*>(base);
}

CudaArena::~CudaArena() { cudaFree(base_); }  // no throw from a destructor; errors ignored

void* CudaArena::allocate(std::size_t bytes) { return base_ + layout_.allocate(bytes); }

void CudaArena::release(void* block) {
  layout_.release(static_cast<std::size_t>(static_cast<char*>(block) - base_));
}

}  // namespace whale::exec::cuda

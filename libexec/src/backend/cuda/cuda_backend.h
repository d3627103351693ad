// File: cuda_backend.h
// Private: the CUDA backend's constructor, called by make_backend (backend_factory.cpp) for a
// GPU device, and by the device tests. Implemented under backend/cuda/ and compiled only when
// WHALE_HAVE_CUDA.
#pragma once

#include <cstddef>
#include <memory>

#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/backend_factory.h"

namespace whale::exec {

struct CudaBackendOptions {
  int device = 0;                      // CUDA device ordinal
  DType compute_dtype = DType::fp32;   // fp32, bf16 or fp16
  /// fp32 GEMMs on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32): the plan's tf32 precision.
  bool tf32 = false;
  /// Bytes of the rank's memory arena, allocated once up front (gpu::arena_bytes_for_peak of
  /// the plan's predicted peak); 0 takes gpu::kDefaultArenaBytes. Construction throws
  /// whale::Error when the arena and gpu::kDeviceReserveBytes exceed the free memory.
  std::size_t arena_bytes = 0;
};

/// A Backend on GPU request.local_gpu computing in compute_dtype(request.precision), with its
/// own compute, communication and copy streams. Throws whale::Error when the GPU is missing.
std::unique_ptr<Backend> make_cuda_backend(const BackendRequest& request);
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);

/// cudaGetDeviceCount, or 0 when it fails (no driver, no device).
int cuda_device_count();

/// The peak of arena bytes in use since construction, for a backend from make_cuda_backend
/// (0 for any other backend).
std::size_t cuda_backend_peak_bytes(const Backend& backend);

}  // namespace whale::exec

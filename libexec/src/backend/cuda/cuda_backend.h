// File: cuda_backend.h
// Private: the constructor of the CUDA Backend, called by the backend factory (and the device
// tests). Declared here, outside the public headers, because only the factory picks backends.
#pragma once

#include <cstddef>
#include <memory>

#include "whale/exec/backend/backend.h"

namespace whale::exec {

struct CudaBackendOptions {
  int device = 0;  // CUDA device ordinal
  /// Bytes of the rank's memory arena, allocated once up front; 0 takes 90% of the device's
  /// free memory at construction.
  std::size_t arena_bytes = 0;
  /// fp32 GEMMs on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32); off keeps fp32 exact
  /// enough to match the CPU backend within 1e-5.
  bool tf32 = false;
};

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options = {});

/// The peak of arena bytes in use since construction, for a backend from make_cuda_backend
/// (0 for any other backend).
std::size_t cuda_backend_peak_bytes(const Backend& backend);

}  // namespace whale::exec

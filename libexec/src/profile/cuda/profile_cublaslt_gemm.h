// File: profile_cublaslt_gemm.h
// ProfileGemm: one cuBLASLt matrix multiply of a fixed shape and precision for the GEMM sweep, its
// descriptors and algorithm prepared once (the backend's PreparedLtGemm), so that timed runs
// time the GEMM alone.
#pragma once

#include "backend/cuda/cublaslt_gemm.h"
#include "profile/cuda/profile_cuda_buffer.h"
#include "whale/plan/precision.h"

namespace whale::exec {

class ProfileGemm {
 public:
  /// Column-major C (m x n) = A (m x k) * B (k x n), all stored in `p` (tf32: fp32 storage
  /// with TF32 tensor-core math), accumulated in fp32; the algorithm cuBLASLt's heuristic
  /// ranks first within a 32 MiB workspace. Throws (WHALE_CUBLAS_CHECK) when cuBLASLt fails or
  /// offers no algorithm.
  ProfileGemm(cublasLtHandle_t handle, plan::Precision p, int m, int n, int k);

  /// Enqueues C = A * B on `stream`; a, b, c are device pointers of the shapes above.
  void run(const void* a, const void* b, void* c, cudaStream_t stream);

 private:
  cuda::GemmCall call_;
  DeviceBuffer workspace_;
  cuda::PreparedLtGemm gemm_;
};

}  // namespace whale::exec

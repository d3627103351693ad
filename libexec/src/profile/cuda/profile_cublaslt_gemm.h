// File: profile_cublaslt_gemm.h
// LtGemm: one cuBLASLt matrix multiply of a fixed shape and dtype, its descriptors and
// algorithm chosen once, so that timed runs time the GEMM alone.
#pragma once

#include <cublasLt.h>

#include "profile/cuda/profile_cuda_buffer.h"
#include "whale/plan/precision.h"

namespace whale::exec {

class LtGemm {
 public:
  /// Column-major C (m x n) = A (m x k) * B (k x n), all stored in `p` (tf32: fp32 storage
  /// with TF32 tensor-core math), accumulated in fp32; the algorithm cuBLASLt's heuristic
  /// ranks first within a 32 MiB workspace. Throws std::runtime_error naming the call when
  /// cuBLASLt fails or offers no algorithm.
  LtGemm(cublasLtHandle_t handle, plan::Precision p, int m, int n, int k);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  /// Enqueues C = A * B on `stream`; a, b, c are device pointers of the shapes above.
  void run(const void* a, const void* b, void* c, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  DeviceBuffer workspace_;
};

}  // namespace whale::exec

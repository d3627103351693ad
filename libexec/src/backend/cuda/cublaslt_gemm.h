// File: cublaslt_gemm.h
// GEMMs through cuBLASLt: fp32, bf16 or fp16 operands with fp32 accumulation
// (CUBLAS_COMPUTE_32F; fp32 may opt into TF32, CUBLAS_COMPUTE_32F_FAST_TF32), optional
// epilogues (bias, GELU with bias, GELU with bias and aux, DGELU, bias gradient), the
// heuristic's first algorithm for the operands' alignment cached per shape and alignment, one
// workspace owned by the caller.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "backend/gpu_host/gemm_layout.h"

namespace whale::exec::cuda {

enum class GemmDtype { kF32, kBF16, kF16 };

/// One row-major GEMM c (m, n) = op(a) op(b) [+ c] (gpu::lt_gemm's contract) with its epilogue.
struct GemmCall {
  GemmDtype dtype = GemmDtype::kF32;      // a and b
  GemmDtype out_dtype = GemmDtype::kF32;  // c (and bias)
  bool tf32 = false;  // fp32 only: TF32 tensor cores (10-bit mantissa products)
  bool trans_a = false, trans_b = false, accumulate = false;
  int m = 0, n = 0, k = 0;
  gpu::RowStrides strides;  // a, b and c's row strides in elements (0: dense); aux is dense
  gpu::GemmEpilogue epilogue = gpu::GemmEpilogue::kNone;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;  // kBias, kGeluBias, kGeluAuxBias: n entries, dtype of c
  void* bias_grad = nullptr;   // kBGradB (written): the sums of op(a) (m, k) over k, m entries
  void* aux = nullptr;         // kGeluAuxBias (written), kDGelu (read): (m, n) row-major
};

/// One GEMM shape (a GemmCall's dtypes, tf32, transposes, accumulate, sizes, row strides and
/// epilogue, and
/// the alignment of its a, b and c pointers, gpu::gemm_alignment_bytes) with its cuBLASLt
/// descriptors and the heuristic's first algorithm for `workspace_bytes` and that alignment,
/// made once, so that run() issues the matmul alone (what a timed run should time).
class PreparedLtGemm {
 public:
  /// Throws (WHALE_CUBLAS_CHECK) when cuBLASLt has no algorithm for the shape. `handle` must
  /// outlive the object.
  PreparedLtGemm(cublasLtHandle_t handle, const GemmCall& shape, std::size_t workspace_bytes);
  ~PreparedLtGemm();
  PreparedLtGemm(const PreparedLtGemm&) = delete;
  PreparedLtGemm& operator=(const PreparedLtGemm&) = delete;

  /// Issues `call` on `stream`; its shape must be the one this was prepared for, its pointers
  /// (a, b, c and the epilogue's) are this call's, aligned at least as the prepared ones. The workspace holds at least the prepared
  /// workspace_bytes.
  void run(cudaStream_t stream, const GemmCall& call, void* workspace);

 private:
  void destroy_descriptors() noexcept;

  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t first_ = nullptr, second_ = nullptr, out_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_;
  std::int64_t aux_ld_;
  float beta_;
};

/// Issues GemmCalls of any shape, preparing each shape once (PreparedLtGemm) and keeping it.
class LtGemmRunner {
 public:
  /// `workspace` (device memory of workspace_bytes) must outlive the runner.
  LtGemmRunner(void* workspace, std::size_t workspace_bytes);
  ~LtGemmRunner();
  LtGemmRunner(const LtGemmRunner&) = delete;
  LtGemmRunner& operator=(const LtGemmRunner&) = delete;

  /// Issues the GEMM on `stream`. Throws (WHALE_CUBLAS_CHECK) when cuBLASLt has no algorithm.
  void run(cudaStream_t stream, const GemmCall& call);
  /// Shapes whose algorithm is cached.
  std::size_t cached_algorithms() const { return prepared_.size(); }

 private:
  // (dtype, out dtype, tf32, trans_a, trans_b, accumulate, epilogue, m, n, k, the
  // alignments of a, b and c in bytes, and their row strides)
  using Key = std::tuple<int, int, bool, bool, bool, bool, int, int, int, int, std::uint32_t,
                         std::uint32_t, std::uint32_t, int, int, int>;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_;
  std::size_t workspace_bytes_;
  std::map<Key, std::unique_ptr<PreparedLtGemm>> prepared_;
};

}  // namespace whale::exec::cuda

// File: profile_cublaslt_gemm.cpp
// LtGemm: cuBLASLt descriptors, the heuristic's first algorithm, and the matmul call.
#include "profile/cuda/profile_cublaslt_gemm.h"

#include <stdexcept>
#include <string>

namespace whale::exec {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

cudaDataType_t data_type(plan::Precision p) {
  switch (p) {
    case plan::Precision::fp16: return CUDA_R_16F;
    case plan::Precision::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

}  // namespace

LtGemm::LtGemm(cublasLtHandle_t handle, plan::Precision p, int m, int n, int k)
    : handle_(handle), workspace_(kWorkspaceBytes) {
  const cublasComputeType_t compute =
      p == plan::Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = data_type(p);
  WHALE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
  WHALE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, type, m, k, m));
  WHALE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, type, k, n, k));
  WHALE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, type, m, n, m));
  cublasLtMatmulPreference_t preference = nullptr;
  WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const std::size_t workspace_bytes = kWorkspaceBytes;
  WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_, op_, a_, b_, c_, c_, preference, 1, &result, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  WHALE_CUBLAS_CHECK(status);
  if (returned == 0)
    throw std::runtime_error(std::string("cuBLASLt offers no algorithm for a ") +
                             plan::to_string(p) + " GEMM of " + std::to_string(m) + "x" +
                             std::to_string(n) + "x" + std::to_string(k));
  algo_ = result.algo;
}

LtGemm::~LtGemm() {
  if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
  if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
  if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
  if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
}

void LtGemm::run(const void* a, const void* b, void* c, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  WHALE_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_,
                                    &algo_, workspace_.get(), workspace_.bytes(), stream));
}

}  // namespace whale::exec

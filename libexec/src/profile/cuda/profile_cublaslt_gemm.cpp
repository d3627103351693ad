// File: profile_cublaslt_gemm.cpp
// ProfileGemm: a column-major GEMM expressed as the backend's row-major GemmCall.
#include "profile/cuda/profile_cublaslt_gemm.h"

namespace whale::exec {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

/// Column-major C (m x n) = A B is row-major C^T (n, m) = B^T (n, k) A^T (k, m), and a
/// column-major matrix read row-major is its transpose: the row-major call's a is B, its b is A.
cuda::GemmCall column_major_call(plan::Precision p, int m, int n, int k) {
  cuda::GemmCall call;
  switch (p) {
    case plan::Precision::fp16: call.dtype = cuda::GemmDtype::kF16; break;
    case plan::Precision::bf16: call.dtype = cuda::GemmDtype::kBF16; break;
    default: call.dtype = cuda::GemmDtype::kF32; break;
  }
  call.out_dtype = call.dtype;
  call.tf32 = p == plan::Precision::tf32;
  call.m = n;
  call.n = m;
  call.k = k;
  return call;
}

}  // namespace

ProfileGemm::ProfileGemm(cublasLtHandle_t handle, plan::Precision p, int m, int n, int k)
    : call_(column_major_call(p, m, n, k)),
      workspace_(kWorkspaceBytes),
      gemm_(handle, call_, kWorkspaceBytes) {}

void ProfileGemm::run(const void* a, const void* b, void* c, cudaStream_t stream) {
  call_.a = b;
  call_.b = a;
  call_.c = c;
  gemm_.run(stream, call_, workspace_.get());
}

}  // namespace whale::exec

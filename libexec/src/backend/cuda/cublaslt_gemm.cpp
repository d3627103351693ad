// File: cublaslt_gemm.cpp
// cuBLASLt GEMMs (see cublaslt_gemm.h): descriptors from gpu::lt_gemm, epilogue attributes, the
// heuristic's algorithm cached per (dtype, transposes, shape, epilogue).
#include "backend/cuda/cublaslt_gemm.h"

#include <memory>

#include "backend/cuda/cuda_check.h"

namespace whale::exec::cuda {
namespace {

cudaDataType_t data_type(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBF16: return CUDA_R_16BF;
    case GemmDtype::kF16: return CUDA_R_16F;
    case GemmDtype::kF32: break;
  }
  return CUDA_R_32F;
}

cublasLtEpilogue_t lt_epilogue(gpu::GemmEpilogue epilogue) {
  switch (epilogue) {
    case gpu::GemmEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case gpu::GemmEpilogue::kGeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case gpu::GemmEpilogue::kGeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case gpu::GemmEpilogue::kDGelu: return CUBLASLT_EPILOGUE_DGELU;
    case gpu::GemmEpilogue::kBGradB: return CUBLASLT_EPILOGUE_BGRADB;
    case gpu::GemmEpilogue::kNone: break;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// RAII owners of the cuBLASLt descriptors of one call.
struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  ~MatmulDesc() { if (desc) cublasLtMatmulDescDestroy(desc); }
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attribute, const V& value) {
    WHALE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
  }
};
struct Layout {
  cublasLtMatrixLayout_t layout = nullptr;
  Layout(cudaDataType_t type, const gpu::ColumnMajorLayout& l) {
    WHALE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, l.rows, l.cols, l.ld));
  }
  ~Layout() { if (layout) cublasLtMatrixLayoutDestroy(layout); }
};
struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() { if (pref) cublasLtMatmulPreferenceDestroy(pref); }
};

}  // namespace

LtGemmRunner::LtGemmRunner(void* workspace, std::size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
  WHALE_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

LtGemmRunner::~LtGemmRunner() {
  if (handle_) cublasLtDestroy(handle_);
}

void LtGemmRunner::run(cudaStream_t stream, const GemmCall& call) {
  const gpu::LtGemm g = gpu::lt_gemm(call.trans_a, call.trans_b, call.m, call.n, call.k, call.accumulate);
  const cudaDataType_t type = data_type(call.dtype);
  const cublasComputeType_t compute = call.dtype == GemmDtype::kF32 && call.tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  MatmulDesc op;
  WHALE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op.desc, compute, CUDA_R_32F));
  op.set(CUBLASLT_MATMUL_DESC_TRANSA, g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N);
  op.set(CUBLASLT_MATMUL_DESC_TRANSB, g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N);
  op.set(CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(call.epilogue));
  if (call.bias) op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias);
  if (call.bias_grad) op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias_grad);
  if (call.aux) {
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, call.aux);
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.out.ld);
  }
  const Layout first(type, g.first), second(type, g.second), out(data_type(call.out_dtype), g.out);

  const Key key{static_cast<int>(call.dtype), static_cast<int>(call.out_dtype), call.tf32, g.trans_first, g.trans_second,
                g.beta_one, static_cast<int>(call.epilogue), g.m, g.n, g.k};
  auto cached = algorithms_.find(key);
  if (cached == algorithms_.end()) {
    Preference pref;
    WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
    WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof workspace_bytes_));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    WHALE_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, op.desc, first.layout, second.layout,
                                                      out.layout, out.layout, pref.pref, 1,
                                                      &result, &found));
    if (found == 0) WHALE_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    cached = algorithms_.emplace(key, result.algo).first;
  }
  const float alpha = 1.0f, beta = g.beta_one ? 1.0f : 0.0f;
  WHALE_CUBLAS_CHECK(cublasLtMatmul(handle_, op.desc, &alpha, call.b, first.layout, call.a,
                                    second.layout, &beta, call.c, out.layout, call.c, out.layout,
                                    &cached->second, workspace_, workspace_bytes_, stream));
}

}  // namespace whale::exec::cuda

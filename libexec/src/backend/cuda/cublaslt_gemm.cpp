// File: cublaslt_gemm.cpp
// cuBLASLt GEMMs (see cublaslt_gemm.h): descriptors from gpu::lt_gemm and the heuristic's
// algorithm prepared once per (dtypes, tf32, transposes, accumulate, epilogue, shape, operand
// alignment); the epilogue's pointers set per call.
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

std::uint32_t alignment_of(const void* pointer) {
  return gpu::gemm_alignment_bytes(reinterpret_cast<std::uintptr_t>(pointer));
}

struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() { if (pref) cublasLtMatmulPreferenceDestroy(pref); }
};

template <class V>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const V& value) {
  WHALE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, const gpu::ColumnMajorLayout& l) {
  cublasLtMatrixLayout_t layout = nullptr;
  WHALE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, l.rows, l.cols, l.ld));
  return layout;
}

}  // namespace

PreparedLtGemm::PreparedLtGemm(cublasLtHandle_t handle, const GemmCall& shape,
                               std::size_t workspace_bytes)
    : handle_(handle), workspace_bytes_(workspace_bytes) {
  const gpu::LtGemm g =
      gpu::lt_gemm(shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k, shape.accumulate,
                   shape.strides);
  aux_ld_ = shape.n;  // the epilogue's aux matrix (m, n) is dense
  beta_ = g.beta_one ? 1.0f : 0.0f;
  const cudaDataType_t type = data_type(shape.dtype);
  const cublasComputeType_t compute = shape.dtype == GemmDtype::kF32 && shape.tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  try {
    WHALE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
    set_attribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_attribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_attribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(shape.epilogue));
    first_ = make_layout(type, g.first);
    second_ = make_layout(type, g.second);
    out_ = make_layout(data_type(shape.out_dtype), g.out);
    Preference pref;
    WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
    WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
        sizeof workspace_bytes_));
    // The heuristic assumes 256-byte-aligned operands unless told: cuBLASLt's A is our b, its
    // B our a, and C and D are c.
    const std::uint32_t alignments[] = {alignment_of(shape.b), alignment_of(shape.a),
                                        alignment_of(shape.c), alignment_of(shape.c)};
    const cublasLtMatmulPreferenceAttributes_t attributes[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; ++i)
      WHALE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
          pref.pref, attributes[i], &alignments[i], sizeof alignments[i]));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    WHALE_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, op_, first_, second_, out_, out_,
                                                      pref.pref, 1, &result, &found));
    if (found == 0) WHALE_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    algo_ = result.algo;
  } catch (...) {
    destroy_descriptors();
    throw;
  }
}

PreparedLtGemm::~PreparedLtGemm() { destroy_descriptors(); }

void PreparedLtGemm::destroy_descriptors() noexcept {
  if (out_) cublasLtMatrixLayoutDestroy(out_);
  if (second_) cublasLtMatrixLayoutDestroy(second_);
  if (first_) cublasLtMatrixLayoutDestroy(first_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

void PreparedLtGemm::run(cudaStream_t stream, const GemmCall& call, void* workspace) {
  // The epilogue's pointers belong to this call; the descriptor keeps the last ones set.
  if (call.bias) set_attribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias);
  if (call.bias_grad) set_attribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias_grad);
  if (call.aux) {
    set_attribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, call.aux);
    set_attribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld_);
  }
  const float alpha = 1.0f;
  WHALE_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, call.b, first_, call.a, second_, &beta_,
                                    call.c, out_, call.c, out_, &algo_, workspace,
                                    workspace_bytes_, stream));
}

LtGemmRunner::LtGemmRunner(void* workspace, std::size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
  WHALE_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

LtGemmRunner::~LtGemmRunner() {
  prepared_.clear();  // their descriptors go before the handle
  if (handle_) cublasLtDestroy(handle_);
}

void LtGemmRunner::run(cudaStream_t stream, const GemmCall& call) {
  const Key key{static_cast<int>(call.dtype), static_cast<int>(call.out_dtype), call.tf32,
                call.trans_a, call.trans_b, call.accumulate, static_cast<int>(call.epilogue),
                call.m, call.n, call.k, alignment_of(call.a), alignment_of(call.b),
                alignment_of(call.c), call.strides.a, call.strides.b, call.strides.c};
  auto prepared = prepared_.find(key);
  if (prepared == prepared_.end())
    prepared = prepared_
                   .emplace(key, std::make_unique<PreparedLtGemm>(handle_, call, workspace_bytes_))
                   .first;
  prepared->second->run(stream, call, workspace_);
}

}  // namespace whale::exec::cuda

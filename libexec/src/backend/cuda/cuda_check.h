// File: cuda_check.h
// Check macros for every CUDA runtime, cuBLAS(Lt), NCCL and CUPTI call of libexec (the backend,
// the communicators and the profiler): a failure throws
// std::runtime_error naming the library's error string, the call, the file and the line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <nccl.h>

namespace whale::exec {

[[noreturn]] void gpu_check_failed(const char* library, const char* error, const char* call,
                                   const char* file, int line);
/// The text of a cuBLAS status and of a CUPTI result.
const char* cublas_status_name(cublasStatus_t status);
const char* cupti_result_name(CUptiResult result);

}  // namespace whale::exec

#define WHALE_CUDA_CHECK(call)                                                          \
  do {                                                                                  \
    cudaError_t whale_cuda_rc_ = (call);                                                \
    if (whale_cuda_rc_ != cudaSuccess)                                                  \
      ::whale::exec::gpu_check_failed("CUDA", cudaGetErrorString(whale_cuda_rc_), #call, \
                                      __FILE__, __LINE__);                              \
  } while (0)

#define WHALE_CUBLAS_CHECK(call)                                                       \
  do {                                                                                 \
    cublasStatus_t whale_cublas_rc_ = (call);                                          \
    if (whale_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                     \
      ::whale::exec::gpu_check_failed(                                                 \
          "cuBLAS", ::whale::exec::cublas_status_name(whale_cublas_rc_), #call, __FILE__, \
          __LINE__);                                                                   \
  } while (0)

#define WHALE_NCCL_CHECK(call)                                                          \
  do {                                                                                  \
    ncclResult_t whale_nccl_rc_ = (call);                                               \
    if (whale_nccl_rc_ != ncclSuccess)                                                  \
      ::whale::exec::gpu_check_failed("NCCL", ncclGetErrorString(whale_nccl_rc_), #call, \
                                      __FILE__, __LINE__);                              \
  } while (0)

#define WHALE_CUPTI_CHECK(call)                                                        \
  do {                                                                                 \
    CUptiResult whale_cupti_rc_ = (call);                                              \
    if (whale_cupti_rc_ != CUPTI_SUCCESS)                                              \
      ::whale::exec::gpu_check_failed(                                                 \
          "CUPTI", ::whale::exec::cupti_result_name(whale_cupti_rc_), #call, __FILE__, \
          __LINE__);                                                                   \
  } while (0)

/// Checks the launch of the kernel just issued (launch configuration errors).
#define WHALE_CUDA_CHECK_LAUNCH() WHALE_CUDA_CHECK(cudaGetLastError())

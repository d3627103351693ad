// File: cuda_test_device.h
// The device check of the CUDA test mains: without a CUDA device they print one line and exit
// with kSkipExitCode, which ctest counts as skipped (SKIP_RETURN_CODE in tests/cuda).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

namespace whale::exec::test {

constexpr int kSkipExitCode = 77;  // tests/cuda/CMakeLists.txt: SKIP_RETURN_CODE

/// True when cudaGetDeviceCount finds a device; otherwise prints "skipped: no CUDA device (why)".
inline bool have_cuda_device() {
  int devices = 0;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc == cudaSuccess && devices > 0) return true;
  std::printf("skipped: no CUDA device (%s)\n",
              rc != cudaSuccess ? cudaGetErrorString(rc) : "cudaGetDeviceCount found 0");
  return false;
}

}  // namespace whale::exec::test

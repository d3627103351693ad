// File: cuda_test_main.cpp
// The main of the device tests: without a CUDA device (cudaGetDeviceCount fails or finds none)
// it prints "skipped: no CUDA device" and exits with kSkipExitCode, which ctest registers as
// SKIP_RETURN_CODE, so the run counts as skipped, never as passed. Otherwise doctest runs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdio>

namespace {
constexpr int kSkipExitCode = 77;  // tests/cuda/CMakeLists.txt: SKIP_RETURN_CODE
}

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device (%s)\n",
                rc != cudaSuccess ? cudaGetErrorString(rc) : "cudaGetDeviceCount found 0");
    return kSkipExitCode;
  }
  doctest::Context context(argc, argv);
  return context.run();
}

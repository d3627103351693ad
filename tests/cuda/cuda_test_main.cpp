// File: cuda_test_main.cpp
// The main of the device tests: without a CUDA device (cudaGetDeviceCount fails or finds none)
// it prints "skipped: no CUDA device" and exits with kSkipExitCode, which ctest registers as
// SKIP_RETURN_CODE, so the run counts as skipped, never as passed. Otherwise doctest runs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "cuda_test_device.h"

int main(int argc, char** argv) {
  if (!whale::exec::test::have_cuda_device()) return whale::exec::test::kSkipExitCode;
  doctest::Context context(argc, argv);
  return context.run();
}

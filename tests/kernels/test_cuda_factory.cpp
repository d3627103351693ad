// File: test_cuda_factory.cpp
// make_backend for a GPU device in a build with the CUDA backend: the CUDA backend on a machine
// with a GPU, a whale::Error naming the missing device on one without (CI's case).
#include <doctest/doctest.h>

#if WHALE_HAVE_CUDA_BACKEND
#include <cuda_runtime.h>

#include <string>

#include "whale/exec/backend/backend_factory.h"
#include "whale/plan/error.h"

using namespace whale;
using namespace whale::exec;

TEST_CASE("make_backend: a gpu device gets the CUDA backend, or an error naming the device") {
  BackendRequest request;
  request.plan_file = "plan.yaml";
  request.device_kind = "gpu";
  request.device_name = "a100-sxm4-80gb";
  request.precision = plan::Precision::bf16;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  if (devices == 0) {
    CHECK_THROWS_WITH_AS(make_backend(request),
                         doctest::Contains("device: CUDA device 0 for GPU device 'a100-sxm4-80gb' "
                                           "(this node has 0)"),
                         Error);
  } else {
    const auto backend = make_backend(request);
    CHECK(std::string(backend->name()) == "cuda:0");
    CHECK(backend->compute_dtype() == DType::bf16);
  }
}
#endif

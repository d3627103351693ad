// File: test_backend_factory.cpp
// make_backend: the CPU backend with the plan's precision as its compute dtype, the slowdown
// decorator around it, and the errors for a GPU device without the CUDA backend, an unknown
// device kind and a bad thread count.
#include <doctest/doctest.h>

#include "whale/exec/backend/backend_factory.h"
#include "whale/plan/error.h"

using namespace whale;
using namespace whale::exec;

TEST_CASE("make_backend: a CPU device computes in the plan's precision") {
  BackendRequest request;
  CHECK(make_backend(request)->compute_dtype() == DType::fp32);
  request.precision = plan::Precision::tf32;  // a GEMM mode: fp32 operands
  CHECK(make_backend(request)->compute_dtype() == DType::fp32);
  request.precision = plan::Precision::bf16;
  CHECK(make_backend(request)->compute_dtype() == DType::bf16);
  request.precision = plan::Precision::fp16;
  request.slowdown_factor = 2.0;  // decorated, the same dtype and name
  const auto slowed = make_backend(request);
  CHECK(slowed->compute_dtype() == DType::fp16);
  CHECK(std::string(slowed->name()) == "cpu");
}

TEST_CASE("make_backend: bad requests are whale::Errors naming the device") {
  BackendRequest request;
  request.plan_file = "plan.yaml";
  request.device_kind = "gpu";
  request.device_name = "a100-sxm4-80gb";
#if !WHALE_HAVE_CUDA_BACKEND
  CHECK_THROWS_WITH_AS(make_backend(request),
                       "plan.yaml: device: a build with the CUDA backend for GPU device "
                       "'a100-sxm4-80gb' (hint: this whale-run was built without CUDA; run the "
                       "plan on CPU ranks with `whale-run --device cpu`, or rebuild with the "
                       "CUDA Toolkit)",
                       Error);
#endif
  request.device_kind = "tpu";
  CHECK_THROWS_WITH_AS(make_backend(request),
                       doctest::Contains("device.kind: \"cpu\" or \"gpu\" for device "
                                         "'a100-sxm4-80gb', got \"tpu\""),
                       Error);
  request.device_kind = "cpu";
  request.threads = 0;
  CHECK_THROWS_WITH_AS(make_backend(request),
                       doctest::Contains("threads: a thread count of at least 1, got 0"), Error);
}

TEST_CASE("dtype sizes and names") {
  CHECK(element_bytes(DType::fp32) == 4);
  CHECK(element_bytes(DType::bf16) == 2);
  CHECK(element_bytes(DType::fp16) == 2);
  CHECK(element_bytes(DType::i32) == 4);
  CHECK(std::string(dtype_name(DType::bf16)) == "bf16");
  CHECK(!is_float(DType::i32));
}

TEST_CASE("peak_memory_bytes: the most bytes live at once, in the backend's 64-byte blocks") {
  BackendRequest request;
  request.slowdown_factor = 2.0;  // the decorator reports its backend's peak
  const auto backend = make_backend(request);
  CHECK(backend->peak_memory_bytes() == 0);
  void* a = backend->allocate(100);  // 128 bytes
  void* b = backend->allocate(64);   // 64
  CHECK(backend->peak_memory_bytes() == 192);
  backend->release(a);
  void* c = backend->allocate(100);  // the released 128-byte block again: 192 live
  CHECK(backend->peak_memory_bytes() == 192);
  void* d = backend->allocate(1);  // 64 more: 256 live
  CHECK(backend->peak_memory_bytes() == 256);
  for (void* p : {b, c, d}) backend->release(p);
  CHECK(backend->peak_memory_bytes() == 256);
}

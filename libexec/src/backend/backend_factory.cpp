// File: backend_factory.cpp
// make_backend: the CPU or the CUDA backend for a rank's device, wrapped in the slowdown
// decorator when its profile asks for one.
#include "whale/exec/backend/backend_factory.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/ops_slowdown.h"
#include "whale/plan/error.h"
#if WHALE_HAVE_CUDA_BACKEND
#include "backend/cuda/cuda_backend.h"
#endif

namespace whale::exec {

int local_gpu_count() {
#if WHALE_HAVE_CUDA_BACKEND
  return cuda_device_count();
#else
  return -1;
#endif
}

std::unique_ptr<Backend> make_backend(const BackendRequest& request) {
  if (request.threads < 1)
    throw Error(request.plan_file, "threads", "a thread count of at least 1, got " +
                                   std::to_string(request.threads),
                "pass --threads N with N >= 1");
  std::unique_ptr<Backend> backend;
  if (request.device_kind == "cpu") {
    backend = make_cpu_backend(compute_dtype(request.precision), request.threads);
  } else if (request.device_kind == "gpu") {
#if WHALE_HAVE_CUDA_BACKEND
    backend = make_cuda_backend(request);
#else
    throw Error(request.plan_file, "device", "a build with the CUDA backend for GPU device '" +
                                  request.device_name + "'",
                "this whale-run was built without CUDA; run the plan on CPU ranks with "
                "`whale-run --device cpu`, or rebuild with the CUDA Toolkit");
#endif
  } else {
    throw Error(request.plan_file, "device.kind", "\"cpu\" or \"gpu\" for device '" + request.device_name +
                                       "', got \"" + request.device_kind + "\"",
                "fix the kind in the device's profile");
  }
  return make_slowed_backend(std::move(backend), request.slowdown_factor);
}

}  // namespace whale::exec

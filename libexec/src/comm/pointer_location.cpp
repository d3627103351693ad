// File: pointer_location.cpp
// is_device_pointer (the CUDA runtime's pointer attributes when built with CUDA) and the check
// that guards every MPI buffer.
#include "comm/pointer_location.h"

#include <string>

#include "whale/plan/check.h"

#if WHALE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace whale::exec {

bool is_device_pointer(const void* data) {
#if WHALE_HAVE_CUDA
  if (data == nullptr) return false;
  static const bool have_gpu = [] {
    int devices = 0;
    const bool ok = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    cudaGetLastError();  // a machine without a GPU is not an error here
    return ok;
  }();
  if (!have_gpu) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
#else
  (void)data;
  return false;
#endif
}

void check_host_pointer(const void* data, const char* call) {
  WHALE_CHECK(!is_device_pointer(data),
              std::string(call) + ": a device pointer reached MPI (GPU ranks talk NCCL or go "
                                  "through the host bridge)");
}

}  // namespace whale::exec

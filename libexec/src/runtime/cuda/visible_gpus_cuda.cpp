// File: visible_gpus_cuda.cpp
// The GPUs this process sees, named by the CUDA runtime (built only with CUDA).
#include <cuda_runtime.h>

#include "runtime/visible_gpus.h"

namespace whale::exec {

std::vector<std::string> cuda_visible_gpu_names() {
  int count = 0;
  // No driver or no device is an answer here (no GPU), not a failure.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, i) != cudaSuccess) {
      (void)cudaGetLastError();
      names.push_back("unknown GPU");
      continue;
    }
    names.emplace_back(props.name);
  }
  return names;
}

}  // namespace whale::exec

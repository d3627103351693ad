// File: cuda_staging.cpp
// CudaStaging: the host bridge's copies between one GPU's memory and host memory.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "whale/exec/comm/nccl_communicator.h"

namespace whale::exec {
namespace {

class CudaStaging : public DeviceStaging {
 public:
  explicit CudaStaging(int gpu) : gpu_(gpu) {}
  void download(float* host, const float* device, std::size_t count) override {
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
    WHALE_CUDA_CHECK(cudaMemcpy(host, device, count * sizeof(float), cudaMemcpyDeviceToHost));
  }
  void upload(float* device, const float* host, std::size_t count) override {
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
    WHALE_CUDA_CHECK(cudaMemcpy(device, host, count * sizeof(float), cudaMemcpyHostToDevice));
  }

 private:
  int gpu_;
};

}  // namespace

std::shared_ptr<DeviceStaging> make_cuda_staging(int gpu) {
  return std::make_shared<CudaStaging>(gpu);
}

}  // namespace whale::exec

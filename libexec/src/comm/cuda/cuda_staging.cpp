// File: cuda_staging.cpp
// CudaStaging: the host bridge's copies between one GPU's memory and host memory, by
// cudaMemcpyAsync on a stream of its own through a pinned bounce buffer (pageable memory would
// make the copy synchronous and staged by the driver anyway).
#include <cuda_runtime.h>

#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "whale/exec/comm/nccl_communicator.h"

namespace whale::exec {
namespace {

class CudaStaging : public DeviceStaging {
 public:
  CudaStaging(int gpu, cudaStream_t compute) : gpu_(gpu), compute_(compute) {
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
    WHALE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    WHALE_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  }
  ~CudaStaging() override {  // no throw from a destructor: errors are ignored
    cudaStreamSynchronize(stream_);
    cudaFreeHost(pinned_);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }
  CudaStaging(const CudaStaging&) = delete;
  CudaStaging& operator=(const CudaStaging&) = delete;

  void download(float* host, const float* device, std::size_t count) override {
    float* bounce = pinned(count);
    if (compute_ != nullptr) {  // the data are complete once the compute stream gets here
      WHALE_CUDA_CHECK(cudaEventRecord(ready_, compute_));
      WHALE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    }
    WHALE_CUDA_CHECK(cudaMemcpyAsync(bounce, device, count * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
    WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(host, bounce, count * sizeof(float));
  }
  void upload(float* device, const float* host, std::size_t count) override {
    float* bounce = pinned(count);
    std::memcpy(bounce, host, count * sizeof(float));
    // No wait for the compute stream: the bridge uploads only into memory whose download (of
    // the same collective) already waited for it, and that later compute work does not touch
    // before the collective completes; waiting here would stall the host on the whole queue.
    WHALE_CUDA_CHECK(cudaMemcpyAsync(device, bounce, count * sizeof(float),
                                     cudaMemcpyHostToDevice, stream_));
    // The bounce buffer is reused by the next call: the copy must be done before returning.
    WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  /// The pinned bounce buffer, grown (never shrunk) to at least `count` floats.
  float* pinned(std::size_t count) {
    WHALE_CUDA_CHECK(cudaSetDevice(gpu_));
    if (count > pinned_count_) {
      WHALE_CUDA_CHECK(cudaFreeHost(pinned_));
      pinned_ = nullptr;
      WHALE_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned_), count * sizeof(float)));
      pinned_count_ = count;
    }
    return pinned_;
  }

  int gpu_;
  cudaStream_t compute_;  // the rank's compute stream, or null
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  float* pinned_ = nullptr;
  std::size_t pinned_count_ = 0;
};

}  // namespace

std::shared_ptr<DeviceStaging> make_cuda_staging(int gpu, void* compute_stream) {
  return std::make_shared<CudaStaging>(gpu, static_cast<cudaStream_t>(compute_stream));
}

}  // namespace whale::exec

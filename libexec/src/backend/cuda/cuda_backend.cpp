// File: cuda_backend.cpp
// The CUDA backend's construction and memory: one stream, the arena, cuBLASLt's workspace;
// allocate/release/upload/download/copy/fill in stream order (see cuda_backend_impl.h).
#include <stdexcept>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"

namespace whale::exec {

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

std::size_t cuda_backend_peak_bytes(const Backend& backend) {
  const auto* cuda_backend = dynamic_cast<const cuda::CudaBackend*>(&backend);
  return cuda_backend ? cuda_backend->peak_bytes() : 0;
}

namespace cuda {
namespace {
/// cuBLASLt's workspace: 32 MiB, what NVIDIA recommends for Hopper (cuBLAS documentation,
/// "cublasSetWorkspace").
constexpr std::size_t kGemmWorkspaceBytes = std::size_t{32} << 20;
}  // namespace

CudaBackend::CudaBackend(const CudaBackendOptions& options) : options_(options) {
  WHALE_CUDA_CHECK(cudaSetDevice(options.device));
  std::size_t arena_bytes = options.arena_bytes;
  if (arena_bytes == 0) {
    std::size_t free_bytes = 0, total_bytes = 0;
    WHALE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    arena_bytes = free_bytes / 10 * 9;
  }
  WHALE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  arena_ = std::make_unique<CudaArena>(arena_bytes);
  workspace_ = arena_->allocate(kGemmWorkspaceBytes);
  gemm_ = std::make_unique<LtGemmRunner>(workspace_, kGemmWorkspaceBytes);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);  // destructors do not throw; errors were reported by the ops
  gemm_.reset();
  arena_.reset();
  cudaStreamDestroy(stream_);
}

float* CudaBackend::allocate(std::size_t count) {
  auto* data = static_cast<float*>(arena_->allocate(count * sizeof(float)));
  WHALE_CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(float), stream_));
  return data;
}

void CudaBackend::release(float* data) { arena_->release(data); }

void CudaBackend::upload(float* device, const float* host, std::size_t count) {
  WHALE_CUDA_CHECK(cudaMemcpyAsync(device, host, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host buffer may go when we return
}

void CudaBackend::download(float* host, const float* device, std::size_t count) {
  WHALE_CUDA_CHECK(cudaMemcpyAsync(host, device, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy(float* dst, const float* src, std::size_t count) {
  WHALE_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::fill_zero(float* data, std::size_t count) {
  WHALE_CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(float), stream_));
}

void CudaBackend::synchronize() { WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

std::unique_ptr<CudaBackend::Scratch> CudaBackend::upload_ints(const int32_t* host, std::size_t count) {
  auto scratch = std::make_unique<Scratch>(*arena_, count * sizeof(int32_t));
  WHALE_CUDA_CHECK(cudaMemcpyAsync(scratch->as<int32_t>(), host, count * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream_));
  WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host array may go when we return
  return scratch;
}

}  // namespace cuda
}  // namespace whale::exec

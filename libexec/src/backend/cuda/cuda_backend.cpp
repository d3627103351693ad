// File: cuda_backend.cpp
// The CUDA backend's construction, memory, streams and events (see cuda_backend_impl.h).
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/arena_size.h"
#include "whale/plan/error.h"

namespace whale::exec {

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

std::unique_ptr<Backend> make_cuda_backend(const BackendRequest& request) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || request.local_gpu >= devices)
    throw Error(request.plan_file, "device",
                "CUDA device " + std::to_string(request.local_gpu) + " for GPU device '" +
                    request.device_name + "' (this node has " + std::to_string(devices) + ")",
                "run on a node with enough GPUs, or on CPU ranks with `whale-run --device cpu`");
  CudaBackendOptions options;
  options.device = request.local_gpu;
  options.compute_dtype = compute_dtype(request.precision);
  options.tf32 = request.precision == plan::Precision::tf32;
  options.arena_bytes = request.arena_bytes;
  return make_cuda_backend(options);
}

int cuda_device_count() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error of later calls
    return 0;
  }
  return devices;
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

void check_same_bytes(std::size_t dst, std::size_t src, const char* what) {
  if (dst != src)
    throw std::invalid_argument(std::string("CUDA backend ") + what + ": " + std::to_string(dst) +
                                " bytes into " + std::to_string(src));
}
}  // namespace

CudaBackend::CudaBackend(const CudaBackendOptions& options)
    : options_(options), name_("cuda:" + std::to_string(options.device)) {
  if (!is_float(options.compute_dtype))
    throw std::invalid_argument("CUDA backend: compute dtype must be fp32, bf16 or fp16");
  WHALE_CUDA_CHECK(cudaSetDevice(options.device));
  // The arena takes what the plan predicts (arena_size.h), never the whole device: NCCL,
  // cuBLAS, CUPTI and other ranks on the same GPU need the rest.
  const std::size_t arena_bytes =
      options.arena_bytes > 0 ? options.arena_bytes : gpu::kDefaultArenaBytes;
  std::size_t free_bytes = 0, total_bytes = 0;
  WHALE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::string shortfall = gpu::arena_shortfall(arena_bytes, free_bytes);
  if (!shortfall.empty())
    throw Error("", "device", "a device memory arena that fits " + name_ + ": " + shortfall,
                "the arena is the plan's predicted peak plus a margin: plan for a smaller "
                "micro-batch, or free the GPU of other processes");
  // Blocking streams: work on the legacy default stream (allocate's zero fill) orders after
  // all of them, so memory released by one stream is never refilled under another's feet.
  for (cudaStream_t& s : streams_) WHALE_CUDA_CHECK(cudaStreamCreate(&s));
  for (cudaEvent_t& e : release_events_)
    WHALE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  arena_ = std::make_unique<CudaArena>(arena_bytes);
  workspace_ = arena_->allocate(kGemmWorkspaceBytes);
  gemm_ = std::make_unique<LtGemmRunner>(workspace_, kGemmWorkspaceBytes);
}

CudaBackend::~CudaBackend() {
  cudaDeviceSynchronize();  // destructors do not throw; errors were reported by the ops
  gemm_.reset();
  for (const MultiTensorTables* t : {&adamw_tables_, &sgd_tables_, &square_sum_tables_})
    if (t->tables != nullptr) arena_->release(t->tables);
  arena_.reset();
  for (cudaEvent_t e : events_)
    if (e) cudaEventDestroy(e);
  for (cudaEvent_t e : release_events_) cudaEventDestroy(e);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
}

cudaStream_t CudaBackend::cuda_stream(Stream stream) const {
  switch (stream) {
    case Stream::communication: return streams_[1];
    case Stream::copy: return streams_[2];
    case Stream::compute: break;
  }
  return streams_[0];
}

void* CudaBackend::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* data = arena_->allocate(bytes);
  WHALE_CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, cudaStreamLegacy));
  return data;
}

// A released block may still be in use by queued work on any stream. Its next user is either
// allocate (zero fill on the legacy stream, after all queued work) or a compute-stream scratch:
// so the compute stream waits here for the communication and copy streams.
void CudaBackend::release(void* data) {
  if (data == nullptr) return;
  for (int s = 0; s < 2; ++s) {
    WHALE_CUDA_CHECK(cudaEventRecord(release_events_[s], streams_[s + 1]));
    WHALE_CUDA_CHECK(cudaStreamWaitEvent(compute(), release_events_[s], 0));
  }
  arena_->release(data);
}

void CudaBackend::upload(TensorView device, const void* host, Stream stream) {
  WHALE_CUDA_CHECK(cudaMemcpyAsync(device.data, host, device.bytes(), cudaMemcpyHostToDevice,
                                   cuda_stream(stream)));
}

void CudaBackend::download(void* host, ConstTensorView device, Stream stream) {
  WHALE_CUDA_CHECK(cudaMemcpyAsync(host, device.data, device.bytes(), cudaMemcpyDeviceToHost,
                                   cuda_stream(stream)));
}

void CudaBackend::copy(TensorView dst, ConstTensorView src, Stream stream) {
  check_same_bytes(dst.bytes(), src.bytes(), "copy");
  WHALE_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.bytes(), cudaMemcpyDeviceToDevice,
                                   cuda_stream(stream)));
}

void CudaBackend::fill_zero(TensorView data, Stream stream) {
  WHALE_CUDA_CHECK(cudaMemsetAsync(data.data, 0, data.bytes(), cuda_stream(stream)));
}

Event CudaBackend::create_event() {
  cudaEvent_t e = nullptr;
  WHALE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  events_.push_back(e);
  return Event{static_cast<int>(events_.size()) - 1};
}

void CudaBackend::destroy_event(Event event) {
  if (!event.valid() || event.id >= static_cast<int>(events_.size()) || !events_[event.id]) return;
  WHALE_CUDA_CHECK(cudaEventDestroy(events_[event.id]));
  events_[event.id] = nullptr;
}

void CudaBackend::record_event(Event event, Stream stream) {
  WHALE_CUDA_CHECK(cudaEventRecord(events_.at(event.id), cuda_stream(stream)));
}

void CudaBackend::wait_event(Stream stream, Event event) {
  WHALE_CUDA_CHECK(cudaStreamWaitEvent(cuda_stream(stream), events_.at(event.id), 0));
}

void CudaBackend::synchronize(Stream stream) {
  WHALE_CUDA_CHECK(cudaStreamSynchronize(cuda_stream(stream)));
}

void CudaBackend::synchronize() {
  for (cudaStream_t s : streams_) WHALE_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace cuda
}  // namespace whale::exec

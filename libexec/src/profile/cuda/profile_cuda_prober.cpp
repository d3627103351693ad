// File: profile_cuda_prober.cpp
// CudaProber: cuBLAS GEMM sweeps per dtype (L2 flushed between repetitions, cudaEvent timing,
// median), device-to-device copy bandwidth, cudaMemGetInfo, empty-kernel launch overhead, and
// CUPTI kernel timings of one transformer layer's kernels.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "profile/cuda/profile_cuda_buffer.h"
#include "backend/cuda/cuda_check.h"
#include "profile/cuda/profile_cuda_factory.h"
#include "profile/cuda/profile_cuda_kernels.h"
#include "profile/cuda/profile_cupti_collector.h"
#include "whale/exec/profile/profile_output.h"
#include "whale/exec/profile/profile_statistics.h"
#include "whale/plan/error.h"
#include "profile/profile_text.h"

namespace whale::exec {
namespace {

using plan::Precision;

/// The stream, the cuBLAS handle, the timing events and the L2 flush buffer of one device.
class GpuContext {
 public:
  explicit GpuContext(const cudaDeviceProp& props)
      : flush_(std::max<std::size_t>(2 * static_cast<std::size_t>(props.l2CacheSize), 8 << 20)) {
    WHALE_CUDA_CHECK(cudaStreamCreate(&stream_));
    WHALE_CUBLAS_CHECK(cublasCreate(&cublas_));
    WHALE_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    WHALE_CUDA_CHECK(cudaEventCreate(&start_));
    WHALE_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~GpuContext() {
    cudaEventDestroy(stop_);
    cudaEventDestroy(start_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }

  /// Median device time of `op` over `reps` timed runs (after one untimed warm-up); before
  /// each run, untimed, the L2 cache is flushed by writing a buffer twice its size.
  Seconds median_time_s(const std::function<void()>& op, int reps, bool flush_l2) {
    op();
    std::vector<double> times_s;
    for (int r = 0; r < reps; ++r) {
      if (flush_l2) WHALE_CUDA_CHECK(cudaMemsetAsync(flush_.get(), r & 0xff, flush_.bytes(), stream_));
      WHALE_CUDA_CHECK(cudaEventRecord(start_, stream_));
      op();
      WHALE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      WHALE_CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      WHALE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      times_s.push_back(ms * 1e-3);
    }
    return median(std::move(times_s));
  }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DeviceBuffer flush_;
};

cudaDataType_t data_type(Precision p) {
  switch (p) {
    case Precision::fp16: return CUDA_R_16F;
    case Precision::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

/// Column-major C (m x n) = A (m x k) * B (k x n), all stored in `p`, accumulated in fp32
/// (tf32: fp32 storage with TF32 tensor-core math).
void gemm(cublasHandle_t handle, Precision p, int m, int n, int k, const void* a, const void* b,
          void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute =
      p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = data_type(p);
  WHALE_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, type, m,
                                  b, type, k, &beta, c, type, m, compute, CUBLAS_GEMM_DEFAULT));
}

class CudaProber : public DeviceProber {
 public:
  explicit CudaProber(int index) : index_(index) {
    WHALE_CUDA_CHECK(cudaGetDeviceProperties(&props_, index));
  }

  std::string description() const override {
    return "cuda:" + std::to_string(index_) + ": " + props_.name +
           format(", %.1f GiB, sm_%.0f%.0f", props_.totalGlobalMem / kBytesPerGiB, props_.major,
                  props_.minor);
  }

  std::string default_name() const override { return profile_name_slug(props_.name); }

  ProbeResult measure(const ProbeOptions& options, const ProgressFn& progress) override {
    WHALE_CUDA_CHECK(cudaSetDevice(index_));
    GpuContext gpu(props_);
    ProbeResult result;
    plan::DeviceProfile& profile = result.profile;
    profile.name = options.name.empty() ? default_name() : options.name;
    profile.kind = "gpu";
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
      measure_gemm(gpu, p, options.quick, progress, &profile);
    measure_copy(gpu, options.quick, progress, &profile);
    measure_launch(gpu, progress, &profile);
    result.op_timings = time_layer_kernels(gpu, options.quick);
    result.op_timing_source = "CUPTI kernel activity";
    progress(format("cupti: %.0f kernel names recorded", result.op_timings.size()));
    std::size_t free_bytes = 0, total_bytes = 0;
    WHALE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    profile.memory_bytes = static_cast<double>(free_bytes);
    progress(format("memory: %.2f GiB free of %.2f GiB", free_bytes / kBytesPerGiB,
                    total_bytes / kBytesPerGiB));
    profile.source = "measured by whale-profile --device cuda:" + std::to_string(index_) +
                     (options.quick ? " --quick" : "") + " on " + props_.name +
                     "; peaks = best cuBLAS GEMM of each dtype's sweep (L2 flushed, median); "
                     "memory bandwidth = the largest device-to-device copy (read + write bytes)";
    return result;
  }

 private:
  void measure_gemm(GpuContext& gpu, Precision p, bool quick, const ProgressFn& progress,
                    plan::DeviceProfile* profile) {
    const std::vector<int> sizes = quick ? std::vector<int>{256, 512, 1024, 2048, 4096}
                                         : std::vector<int>{256, 512, 1024, 2048, 4096, 8192};
    const int largest = sizes.back();
    const std::size_t elements = static_cast<std::size_t>(largest) * largest;
    const std::size_t bytes = elements * plan::bytes_per_element(p);
    DeviceBuffer a(bytes), b(bytes), c(bytes);
    cuda_kernels::fill(a.get(), elements, p, gpu.stream());
    cuda_kernels::fill(b.get(), elements, p, gpu.stream());
    std::vector<double> flops, achieved;
    for (int n : sizes) {
      const Seconds t = gpu.median_time_s(
          [&] { gemm(gpu.cublas(), p, n, n, n, a.get(), b.get(), c.get()); }, quick ? 5 : 10,
          true);
      flops.push_back(2.0 * n * n * n);
      achieved.push_back(flops.back() / t);
      progress(std::string("gemm ") + plan::to_string(p) +
               format(" n=%.0f: %.3f ms, %.2f TFLOP/s", n, t * 1e3, achieved.back() / 1e12));
    }
    const double peak = max_value(achieved);
    profile->peak_flops_per_s[p] = peak;
    profile->gemm_efficiency[p] = efficiency_curve(flops, achieved, peak);
  }

  void measure_copy(GpuContext& gpu, bool quick, const ProgressFn& progress,
                    plan::DeviceProfile* profile) {
    const std::size_t largest = quick ? (std::size_t{256} << 20) : (std::size_t{1} << 30);
    DeviceBuffer src(largest), dst(largest);
    WHALE_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, largest, gpu.stream()));
    std::vector<double> moved, achieved;
    for (std::size_t bytes = 64 << 10; bytes <= largest; bytes *= 4) {
      const Seconds t = gpu.median_time_s(
          [&] {
            WHALE_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes,
                                             cudaMemcpyDeviceToDevice, gpu.stream()));
          },
          quick ? 5 : 10, false);
      moved.push_back(2.0 * bytes);
      achieved.push_back(2.0 * bytes / t);
      progress(format("copy %.0f KiB: %.2f GB/s (read + write)", bytes / 1024.0,
                      achieved.back() / 1e9));
    }
    const double largest_copy = achieved.back();  // the DRAM figure: no cache holds it
    profile->memory_bandwidth_bytes_per_s = largest_copy;
    profile->memory_efficiency = efficiency_curve(moved, achieved, largest_copy);
  }

  void measure_launch(GpuContext& gpu, const ProgressFn& progress, plan::DeviceProfile* profile) {
    const int launches = 1000;
    const Seconds t = gpu.median_time_s(
        [&] {
          for (int i = 0; i < launches; ++i) cuda_kernels::launch_empty(gpu.stream());
        },
        5, false);
    profile->kernel_launch_s = t / launches;
    progress(format("launch: empty kernel %.3f us", profile->kernel_launch_s * 1e6));
  }

  /// The kernels of one GPT layer's forward (layernorm, QKV, projection, MLP GEMMs in TF32 and
  /// GELU) at 2048 tokens x hidden 1024, run under CUPTI kernel activity recording.
  std::vector<OpTiming> time_layer_kernels(GpuContext& gpu, bool quick) {
    const int tokens = 2048, hidden = 1024, repeats = quick ? 3 : 10;
    const std::size_t wide = static_cast<std::size_t>(tokens) * 4 * hidden;
    DeviceBuffer x(wide * sizeof(float)), w(wide * sizeof(float)), y(wide * sizeof(float));
    DeviceBuffer gamma(hidden * sizeof(float)), beta(hidden * sizeof(float));
    for (const DeviceBuffer* buffer : {&x, &w, &y, &gamma, &beta})
      cuda_kernels::fill(buffer->get(), buffer->bytes() / sizeof(float), Precision::fp32,
                         gpu.stream());
    WHALE_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
    // Row-major [tokens, in] x [in, out] is column-major C (out x tokens) = W (out x in) X.
    const auto linear = [&](int in, int out) {
      gemm(gpu.cublas(), Precision::tf32, out, tokens, in, w.get(), x.get(), y.get());
    };
    KernelActivityCollector collector;
    for (int r = 0; r < repeats; ++r) {
      cuda_kernels::layernorm_forward(y.floats(), x.floats(), gamma.floats(), beta.floats(),
                                      tokens, hidden, gpu.stream());
      linear(hidden, 3 * hidden);  // QKV
      linear(hidden, hidden);      // attention output projection
      linear(hidden, 4 * hidden);  // MLP up
      cuda_kernels::gelu_forward(y.floats(), x.floats(), wide, gpu.stream());
      linear(4 * hidden, hidden);  // MLP down
    }
    WHALE_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
    return collector.stop();
  }

  int index_;
  cudaDeviceProp props_{};
};

}  // namespace

int require_cuda_devices(const char* what) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess)
    throw Error("", what,
                std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorString(rc),
                "run on a machine with an NVIDIA GPU and its driver, or use --device cpu");
  if (count == 0)
    throw Error("", what, "no CUDA device: cudaGetDeviceCount found 0 devices",
                "run on a machine with an NVIDIA GPU, or use --device cpu");
  return count;
}

std::unique_ptr<DeviceProber> make_cuda_prober(int index) {
  const int count = require_cuda_devices("--device");
  if (index >= count)
    throw Error("", "--device",
                "no CUDA device cuda:" + std::to_string(index) + " (this machine has " +
                    std::to_string(count) + ")",
                "use an ordinal below " + std::to_string(count));
  return std::make_unique<CudaProber>(index);
}

}  // namespace whale::exec

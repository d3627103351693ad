// File: profile_cuda_prober.cpp
// CudaProber: cuBLASLt GEMM sweeps per dtype (L2 flushed between repetitions, cudaEvent timing,
// median), device-to-device copy bandwidth, the GELU and layernorm op classes, whale-run's flash
// attention at head sizes 64 and 128, cudaMemGetInfo, empty-kernel launch overhead, and CUPTI
// kernel timings of one transformer layer's kernels.
// The times become a profile through gpu_profile_from (tested on the host).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "profile/cuda/profile_cuda_buffer.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "profile/cuda/profile_cublaslt_gemm.h"
#include "profile/cuda/profile_cuda_factory.h"
#include "profile/cuda/profile_cuda_kernels.h"
#include "profile/cuda/profile_cupti_collector.h"
#include "whale/exec/profile/profile_gpu_measurements.h"
#include "whale/exec/profile/profile_output.h"
#include "whale/exec/profile/profile_statistics.h"
#include "whale/plan/error.h"
#include "profile/profile_text.h"

namespace whale::exec {
namespace {

using plan::Precision;

/// The stream, the cuBLASLt handle, the timing events and the L2 flush buffer of one device.
class GpuContext {
 public:
  explicit GpuContext(const cudaDeviceProp& props)
      : flush_(std::max<std::size_t>(2 * static_cast<std::size_t>(props.l2CacheSize), 8 << 20)) {
    WHALE_CUDA_CHECK(cudaStreamCreate(&stream_));
    WHALE_CUBLAS_CHECK(cublasLtCreate(&cublas_));
    WHALE_CUDA_CHECK(cudaEventCreate(&start_));
    WHALE_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~GpuContext() {
    cudaEventDestroy(stop_);
    cudaEventDestroy(start_);
    cublasLtDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t cublas() const { return cublas_; }

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
  cublasLtHandle_t cublas_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  DeviceBuffer flush_;
};

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
    GpuMeasurements m;
    m.name = options.name.empty() ? default_name() : options.name;
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
      m.gemm[p] = measure_gemm(gpu, p, options.quick, progress);
    m.copy = measure_copy(gpu, options.quick, progress);
    m.op_classes = measure_op_classes(gpu, options.quick, progress);
    m.flash_attention = measure_flash_attention(gpu, options.quick, progress);
    m.kernel_launch_s = measure_launch(gpu, progress);
    ProbeResult result;
    result.op_timings = time_layer_kernels(gpu, options.quick);
    result.op_timing_source = "CUPTI kernel activity";
    progress(format("cupti: %.0f kernel names recorded", result.op_timings.size()));
    std::size_t free_bytes = 0, total_bytes = 0;
    WHALE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    m.memory_bytes = static_cast<double>(free_bytes);
    progress(format("memory: %.2f GiB free of %.2f GiB", free_bytes / kBytesPerGiB,
                    total_bytes / kBytesPerGiB));
    m.source = "measured by whale-profile --device cuda:" + std::to_string(index_) +
               (options.quick ? " --quick" : "") + " on " + props_.name +
               "; peaks = best cuBLASLt GEMM of each dtype's sweep (L2 flushed, median); "
               "memory bandwidth = the largest device-to-device copy (read + write bytes); "
               "op classes gelu and layernorm = their forward kernels, L2 flushed; flash "
               "attention = whale-run's causal kernels, bf16, 2 x 2048 tokens of width 2048, "
               "L2 flushed, median";
    result.profile = gpu_profile_from(m);
    return result;
  }

 private:
  std::vector<TimedSize> measure_gemm(GpuContext& gpu, Precision p, bool quick,
                                      const ProgressFn& progress) {
    const std::vector<int> sizes = quick ? std::vector<int>{256, 512, 1024, 2048, 4096}
                                         : std::vector<int>{256, 512, 1024, 2048, 4096, 8192};
    const int largest = sizes.back();
    const std::size_t elements = static_cast<std::size_t>(largest) * largest;
    const std::size_t bytes = elements * plan::bytes_per_element(p);
    DeviceBuffer a(bytes), b(bytes), c(bytes);
    cuda_kernels::fill(a.get(), elements, p, gpu.stream());
    cuda_kernels::fill(b.get(), elements, p, gpu.stream());
    std::vector<TimedSize> samples;
    for (int n : sizes) {
      ProfileGemm gemm(gpu.cublas(), p, n, n, n);
      const Seconds t = gpu.median_time_s(
          [&] { gemm.run(a.get(), b.get(), c.get(), gpu.stream()); }, quick ? 5 : 10, true);
      samples.push_back({2.0 * n * n * n, t});
      progress(std::string("gemm ") + plan::to_string(p) +
               format(" n=%.0f: %.3f ms, %.2f TFLOP/s", n, t * 1e3, samples.back().size / t / 1e12));
    }
    return samples;
  }

  std::vector<TimedSize> measure_copy(GpuContext& gpu, bool quick, const ProgressFn& progress) {
    const std::size_t largest = quick ? (std::size_t{256} << 20) : (std::size_t{1} << 30);
    DeviceBuffer src(largest), dst(largest);
    WHALE_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, largest, gpu.stream()));
    std::vector<TimedSize> samples;
    for (std::size_t bytes = 64 << 10; bytes <= largest; bytes *= 4) {
      const Seconds t = gpu.median_time_s(
          [&] {
            WHALE_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes,
                                             cudaMemcpyDeviceToDevice, gpu.stream()));
          },
          quick ? 5 : 10, false);
      samples.push_back({2.0 * bytes, t});
      progress(format("copy %.0f KiB: %.2f GB/s (read + write)", bytes / 1024.0,
                      2.0 * bytes / t / 1e9));
    }
    return samples;
  }

  /// GELU and layernorm forward, L2 flushed, in the bytes the model counts for them (the
  /// CPU prober's classes: 2 x 4 bytes per element, in and out).
  std::map<std::string, TimedSize> measure_op_classes(GpuContext& gpu, bool quick,
                                                      const ProgressFn& progress) {
    const int rows = quick ? 4096 : 16384, channels = 1024;
    const std::size_t wide = static_cast<std::size_t>(rows) * 4 * channels;
    const std::size_t narrow = static_cast<std::size_t>(rows) * channels;
    DeviceBuffer x(wide * sizeof(float)), y(wide * sizeof(float)), w(2 * channels * sizeof(float));
    for (const DeviceBuffer* buffer : {&x, &y, &w})
      cuda_kernels::fill(buffer->get(), buffer->bytes() / sizeof(float), Precision::fp32,
                         gpu.stream());
    std::map<std::string, TimedSize> classes;
    classes["gelu"] = {2.0 * wide * sizeof(float),
                       gpu.median_time_s([&] { cuda_kernels::gelu_forward(y.floats(), x.floats(), wide, gpu.stream()); },
                                         quick ? 5 : 10, true)};
    classes["layernorm"] = {
        2.0 * narrow * sizeof(float),
        gpu.median_time_s(
            [&] {
              cuda_kernels::layernorm_forward(y.floats(), x.floats(), w.floats(),
                                              w.floats() + channels, rows, channels, gpu.stream());
            },
            quick ? 5 : 10, true)};
    for (const auto& [name, timed] : classes)
      progress(std::string("op ") + name + format(": %.3f ms, %.2f GB/s", timed.time_s * 1e3,
                                                timed.size / timed.time_s / 1e9));
    return classes;
  }

  /// whale-run's attention (cuda::attention_forward and attention_backward, bf16, causal,
  /// L2 flushed) at 2 x 2048 tokens of width 2048 for head sizes 64 and 128: the attention
  /// core's FLOPs as the model counts them (4 s^2 d per head and sample) and the two times.
  std::vector<GpuMeasurements::FlashAttentionTimes> measure_flash_attention(GpuContext& gpu, bool quick,
                                                                             const ProgressFn& progress) {
    using T = __nv_bfloat16;
    const int batch = 2, sequence = 2048, channels = 2048, reps = quick ? 3 : 10;
    const std::size_t rows = static_cast<std::size_t>(batch) * sequence;
    std::vector<GpuMeasurements::FlashAttentionTimes> out;
    for (int head_size : {64, 128}) {
      const int heads = channels / head_size;
      const std::size_t stats = static_cast<std::size_t>(batch) * heads * sequence;
      DeviceBuffer qkv(rows * 3 * channels * sizeof(T)), dqkv(rows * 3 * channels * sizeof(T));
      DeviceBuffer context(rows * channels * sizeof(T)), dout(rows * channels * sizeof(T));
      DeviceBuffer lse(stats * sizeof(float)), delta(stats * sizeof(float));
      for (const DeviceBuffer* buffer : {&qkv, &dqkv, &context, &dout})
        cuda_kernels::fill(buffer->get(), buffer->bytes() / sizeof(T), Precision::bf16, gpu.stream());
      T* q = static_cast<T*>(qkv.get());
      T* o = static_cast<T*>(context.get());
      // The kernels without attention dropout (a mask's hash per score is not timed here).
      const kmath::AttentionDropoutScalars kNoDropout{};
      GpuMeasurements::FlashAttentionTimes times;
      times.head_size = head_size;
      times.forward_flops = 4.0 * sequence * static_cast<double>(sequence) * head_size * heads * batch;
      times.forward_s = gpu.median_time_s(
          [&] {
            cuda::attention_forward<T>(gpu.stream(), o, lse.floats(), q, batch, sequence, heads,
                                       heads, head_size, kNoDropout);
          },
          reps, true);
      times.backward_s = gpu.median_time_s(
          [&] {
            cuda::attention_backward<T>(gpu.stream(), static_cast<T*>(dqkv.get()),
                                        static_cast<const T*>(dout.get()), q, o, lse.floats(),
                                        delta.floats(), batch, sequence, heads, heads, head_size,
                                        kNoDropout);
          },
          reps, true);
      progress(format("flash attention d=%.0f: forward %.3f ms, %.1f TFLOP/s (model FLOPs)", head_size,
                      times.forward_s * 1e3, times.forward_flops / times.forward_s / 1e12) +
               format("; backward %.3f ms, %.1f TFLOP/s", times.backward_s * 1e3,
                      2 * times.forward_flops / times.backward_s / 1e12));
      out.push_back(times);
    }
    return out;
  }

  Seconds measure_launch(GpuContext& gpu, const ProgressFn& progress) {
    const int launches = 1000;
    const Seconds t = gpu.median_time_s(
        [&] {
          for (int i = 0; i < launches; ++i) cuda_kernels::launch_empty(gpu.stream());
        },
        5, false);
    progress(format("launch: empty kernel %.3f us", t / launches * 1e6));
    return t / launches;
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
    ProfileGemm qkv(gpu.cublas(), Precision::tf32, 3 * hidden, tokens, hidden);
    ProfileGemm projection(gpu.cublas(), Precision::tf32, hidden, tokens, hidden);
    ProfileGemm up(gpu.cublas(), Precision::tf32, 4 * hidden, tokens, hidden);
    ProfileGemm down(gpu.cublas(), Precision::tf32, hidden, tokens, 4 * hidden);
    const auto linear = [&](ProfileGemm& gemm) { gemm.run(w.get(), x.get(), y.get(), gpu.stream()); };
    KernelActivityCollector collector;
    for (int r = 0; r < repeats; ++r) {
      cuda_kernels::layernorm_forward(y.floats(), x.floats(), gamma.floats(), beta.floats(),
                                      tokens, hidden, gpu.stream());
      linear(qkv);
      linear(projection);  // attention output projection
      linear(up);          // MLP up
      cuda_kernels::gelu_forward(y.floats(), x.floats(), wide, gpu.stream());
      linear(down);        // MLP down
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

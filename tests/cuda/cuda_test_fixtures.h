// File: cuda_test_fixtures.h
// Helpers of the device tests: the CPU reference and the CUDA backend side by side, and tensors
// that live on both (the same host values uploaded to each backend).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "kernel_fixtures.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::test {

/// fp32 tolerance of a CUDA op against the CPU backend (normwise): fp32 GEMMs (no TF32) and
/// fp32 kernels differ from Eigen's in summation order and fused multiply-adds only.
constexpr double kDeviceFp32Tolerance = 1e-5;

/// A tensor with the same values in CPU and CUDA backend memory (fp32 or i32).
struct Twin {
  Backend* cpu;
  Backend* gpu;
  Tensor cpu_tensor, gpu_tensor;
  TensorView on_cpu, on_gpu;
  std::size_t count;

  Twin(Backend& c, Backend& g, const void* values, std::size_t n, DType dtype)
      : cpu(&c), gpu(&g), cpu_tensor(c, n, dtype), gpu_tensor(g, n, dtype),
        on_cpu(cpu_tensor.view()), on_gpu(gpu_tensor.view()), count(n) {
    c.upload(on_cpu, values, Stream::compute);
    g.upload(on_gpu, values, Stream::compute);
    c.synchronize(Stream::compute);
    g.synchronize(Stream::compute);
  }
  Twin(Backend& c, Backend& g, const std::vector<float>& values)
      : Twin(c, g, values.data(), values.size(), DType::fp32) {}
  Twin(Backend& c, Backend& g, const std::vector<int32_t>& values)
      : Twin(c, g, values.data(), values.size(), DType::i32) {}

  std::vector<float> values(Backend& b, ConstTensorView t) const {
    std::vector<float> out(count);
    b.download(out.data(), t, Stream::compute);
    b.synchronize(Stream::compute);
    return out;
  }
  std::vector<float> cpu_values() const { return values(*cpu, on_cpu); }
  std::vector<float> gpu_values() const { return values(*gpu, on_gpu); }
  /// The normwise error of the GPU's values against the CPU's.
  double error() const { return normwise_error(gpu_values(), cpu_values()); }
};

struct Backends {
  std::unique_ptr<Backend> cpu = make_cpu_backend(DType::fp32, 1);
  std::unique_ptr<Backend> gpu =
      make_cuda_backend(CudaBackendOptions{0, DType::fp32, false, std::size_t{1} << 30});
  Twin tensor(const std::vector<float>& values) { return Twin(*cpu, *gpu, values); }
  Twin ints(const std::vector<int32_t>& values) { return Twin(*cpu, *gpu, values); }
  /// An attention `probs` twin large enough for either backend's saved state (the CPU's
  /// probabilities, the GPU's log-sum-exps and output copy).
  Twin attention_state(int batch, int sequence, int heads, int head_size) {
    const std::size_t n =
        std::max(cpu->attention_saved_count(batch, sequence, heads, head_size, DType::fp32),
                 gpu->attention_saved_count(batch, sequence, heads, head_size, DType::fp32));
    return tensor(std::vector<float>(n));
  }
};

}  // namespace whale::exec::test

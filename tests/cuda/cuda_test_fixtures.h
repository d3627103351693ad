// File: cuda_test_fixtures.h
// Helpers of the device tests: the CPU reference and the CUDA backend side by side, and tensors
// that live on both (the same host values uploaded to each backend).
#pragma once

#include <memory>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "kernel_fixtures.h"
#include "whale/exec/backend/cpu_backend.h"

namespace whale::exec::test {

/// fp32 tolerance of a CUDA op against the CPU backend (normwise): fp32 GEMMs (no TF32) and
/// fp32 kernels differ from Eigen's in summation order and fused multiply-adds only.
constexpr double kDeviceFp32Tolerance = 1e-5;

/// A tensor with the same values in CPU and CUDA backend memory.
struct Twin {
  Backend* cpu;
  Backend* gpu;
  float* on_cpu;
  float* on_gpu;
  std::size_t count;

  Twin(Backend& c, Backend& g, const std::vector<float>& values)
      : cpu(&c), gpu(&g), on_cpu(c.allocate(values.size())), on_gpu(g.allocate(values.size())),
        count(values.size()) {
    c.upload(on_cpu, values.data(), count);
    g.upload(on_gpu, values.data(), count);
  }
  Twin(Backend& c, Backend& g, std::size_t n) : Twin(c, g, std::vector<float>(n, 0.0f)) {}
  ~Twin() {
    cpu->release(on_cpu);
    gpu->release(on_gpu);
  }
  Twin(const Twin&) = delete;
  Twin& operator=(const Twin&) = delete;

  std::vector<float> cpu_values() const {
    std::vector<float> v(count);
    cpu->download(v.data(), on_cpu, count);
    return v;
  }
  std::vector<float> gpu_values() const {
    std::vector<float> v(count);
    gpu->download(v.data(), on_gpu, count);
    return v;
  }
  /// The normwise error of the GPU's values against the CPU's.
  double error() const { return normwise_error(gpu_values(), cpu_values()); }
};

struct Backends {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::unique_ptr<Backend> gpu = make_cuda_backend(CudaBackendOptions{0, std::size_t{1} << 30, false});
  Twin tensor(const std::vector<float>& values) { return Twin(*cpu, *gpu, values); }
};

}  // namespace whale::exec::test

// File: cpu_backend.cpp
// The CPU backend's factory and memory ops (host memory; upload/download are copies).
#include <algorithm>
#include <memory>

#include "cpu_backend_impl.h"
#include "whale/exec/cpu_backend.h"

namespace whale::exec {

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

namespace cpu {

float* CpuBackend::allocate(std::size_t count) { return new float[count > 0 ? count : 1](); }

void CpuBackend::release(float* data) { delete[] data; }

void CpuBackend::upload(float* device, const float* host, std::size_t count) {
  std::copy(host, host + count, device);
}

void CpuBackend::download(float* host, const float* device, std::size_t count) {
  std::copy(device, device + count, host);
}

void CpuBackend::copy(float* dst, const float* src, std::size_t count) {
  std::copy(src, src + count, dst);
}

void CpuBackend::fill_zero(float* data, std::size_t count) { std::fill(data, data + count, 0.0f); }

}  // namespace cpu
}  // namespace whale::exec

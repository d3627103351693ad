// File: cpu_backend.cpp
// The CPU backend's factory and memory ops (host memory from a reuse pool; upload/download
// are copies).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>

#include "backend/cpu/cpu_backend_impl.h"
#include "whale/exec/backend/cpu_backend.h"
#include "whale/plan/check.h"

namespace whale::exec {

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

namespace cpu {

namespace {
constexpr std::size_t kAlignmentBytes = 64;  // one cache line, one AVX-512 vector
/// Released memory kept for reuse, at most; beyond it a released block goes back to the system
/// (a size sweep, like the profiler's, must not hold every size it ever used).
constexpr std::size_t kMaxPooledBytes = std::size_t{1} << 30;
}  // namespace

CpuBackend::~CpuBackend() {
  for (const auto& [block, count] : block_counts_) std::free(block);
}

float* CpuBackend::allocate(std::size_t count) {
  count = std::max<std::size_t>(count, 1);
  float* block = nullptr;
  auto it = free_blocks_.find(count);
  if (it != free_blocks_.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    pooled_bytes_ -= count * sizeof(float);
  } else {
    const std::size_t bytes =
        (count * sizeof(float) + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
    block = static_cast<float*>(std::aligned_alloc(kAlignmentBytes, bytes));
    if (!block) throw std::bad_alloc();
    block_counts_.emplace(block, count);
  }
  std::fill(block, block + count, 0.0f);
  return block;
}

void CpuBackend::release(float* data) {
  if (!data) return;
  const auto it = block_counts_.find(data);
  WHALE_CHECK(it != block_counts_.end(),
              std::string("CpuBackend::release: memory not allocated by this backend"));
  const std::size_t bytes = it->second * sizeof(float);
  if (pooled_bytes_ + bytes > kMaxPooledBytes) {
    block_counts_.erase(it);
    std::free(data);
    return;
  }
  pooled_bytes_ += bytes;
  free_blocks_[it->second].push_back(data);
}

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

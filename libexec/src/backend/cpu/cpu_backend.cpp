// File: cpu_backend.cpp
// The CPU backend's constructor and memory ops (host memory from a reuse pool; upload and
// download are copies, cast converts on the host).
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_convert.h"
#include "whale/plan/check.h"

namespace whale::exec {

std::unique_ptr<Backend> make_cpu_backend(DType compute, int threads) {
  return std::make_unique<cpu::CpuBackend>(compute, threads);
}

namespace cpu {

namespace {
constexpr std::size_t kAlignmentBytes = 64;  // one cache line, one AVX-512 vector
/// Released memory kept for reuse, at most; beyond it a released block goes back to the system
/// (a size sweep, like the profiler's, must not hold every size it ever used).
constexpr std::size_t kMaxPooledBytes = std::size_t{1} << 30;

void require_same(ConstTensorView a, ConstTensorView b, const char* op, bool same_dtype) {
  if (a.count != b.count || (same_dtype && a.dtype != b.dtype))
    throw std::invalid_argument(std::string("cpu backend: ") + op + " of " +
                                std::to_string(b.count) + " " + dtype_name(b.dtype) + " into " +
                                std::to_string(a.count) + " " + dtype_name(a.dtype));
}
}  // namespace

CpuBackend::CpuBackend(DType compute, int threads)
    : compute_(compute), threads_(threads), pool_(threads) {
  if (!is_float(compute))
    throw std::invalid_argument(std::string("cpu backend: compute dtype ") + dtype_name(compute));
  if (threads < 1)
    throw std::invalid_argument("cpu backend: " + std::to_string(threads) + " threads");
}

CpuBackend::~CpuBackend() {
  for (const auto& [block, bytes] : block_bytes_) std::free(block);
}

void* CpuBackend::allocate(std::size_t bytes) {
  bytes =
      (std::max<std::size_t>(bytes, 1) + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes;
  void* block = nullptr;
  auto it = free_blocks_.find(bytes);
  if (it != free_blocks_.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    pooled_bytes_ -= bytes;
  } else {
    block = std::aligned_alloc(kAlignmentBytes, bytes);
    if (!block) throw std::bad_alloc();
    block_bytes_.emplace(block, bytes);
  }
  std::memset(block, 0, bytes);
  live_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  return block;
}

void CpuBackend::release(void* data) {
  if (!data) return;
  const auto it = block_bytes_.find(data);
  WHALE_CHECK(it != block_bytes_.end(),
              std::string("CpuBackend::release: memory not allocated by this backend"));
  const std::size_t bytes = it->second;
  live_bytes_ -= bytes;
  if (pooled_bytes_ + bytes > kMaxPooledBytes) {
    block_bytes_.erase(it);
    std::free(data);
    return;
  }
  pooled_bytes_ += bytes;
  free_blocks_[bytes].push_back(data);
}

void CpuBackend::upload(TensorView device, const void* host, Stream) {
  std::memcpy(device.data, host, device.bytes());
}

void CpuBackend::download(void* host, ConstTensorView device, Stream) {
  std::memcpy(host, device.data, device.bytes());
}

void CpuBackend::copy(TensorView dst, ConstTensorView src, Stream) {
  require_same(dst, src, "copy", true);
  std::memmove(dst.data, src.data, src.bytes());
}

void CpuBackend::cast(TensorView dst, ConstTensorView src, Stream) {
  require_same(dst, src, "cast", false);
  Fp32Operands f;
  narrow(f.in(src), dst);
}

void CpuBackend::fill_zero(TensorView data, Stream) { std::memset(data.data, 0, data.bytes()); }

}  // namespace cpu
}  // namespace whale::exec

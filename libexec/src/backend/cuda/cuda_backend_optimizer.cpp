// File: cuda_backend_optimizer.cpp
// The CUDA backend's optimizer steps: AdamW and SGD with momentum, and the gradients' sum of
// squares for clipping, each one multi-tensor launch over every segment (cuda_adamw_kernels.cu,
// cuda_sgd_kernels.cu, cuda_square_sum_kernels.cu) whose device tables live across steps (the
// optimizer's tensors do not move), so a step uploads nothing unless its segments changed.
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_expect_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"

namespace whale::exec::cuda {
namespace {

/// Appends a segment's tensors' addresses, then its count and `decayed`, to `key`; each must be
/// fp32 of the segment's count.
void key_segment(std::vector<std::uintptr_t>& key, std::initializer_list<ConstTensorView> tensors, bool decayed,
                 const char* what) {
  const std::size_t count = tensors.begin()->count;
  for (ConstTensorView t : tensors) {
    expect_dtype(t, DType::fp32, what);
    if (t.count != count)
      throw std::invalid_argument(std::string("CUDA backend ") + what +
                                  ": a segment's tensors differ in element count");
    key.push_back(reinterpret_cast<std::uintptr_t>(t.data));
  }
  key.push_back(count);
  key.push_back(decayed ? 1 : 0);
}

}  // namespace

const char* CudaBackend::multi_tensor_tables(MultiTensorTables& cache, std::vector<std::uintptr_t> key,
                                             const void* entries, std::size_t entry_bytes,
                                             const std::vector<std::size_t>& counts) {
  if (key == cache.key) return static_cast<const char*>(cache.tables);
  const std::vector<gpu::AdamwChunk> chunks = gpu::adamw_chunks(counts);
  release(cache.tables);  // ordered after the previous launch by the compute stream
  cache = MultiTensorTables{};
  cache.chunks_offset = (entry_bytes + 15) / 16 * 16;
  if (!chunks.empty()) {
    cache.tables = allocate(cache.chunks_offset + chunks.size() * sizeof chunks[0]);
    auto* base = static_cast<char*>(cache.tables);
    // From pageable memory: each copy returns once the bytes are staged, so the host vectors
    // may go; the compute stream orders them after allocate's zero fill and before the launch.
    WHALE_CUDA_CHECK(cudaMemcpyAsync(base, entries, entry_bytes, cudaMemcpyHostToDevice, compute()));
    WHALE_CUDA_CHECK(cudaMemcpyAsync(base + cache.chunks_offset, chunks.data(), chunks.size() * sizeof chunks[0],
                                     cudaMemcpyHostToDevice, compute()));
  }
  cache.chunk_count = static_cast<int>(chunks.size());
  cache.key = std::move(key);
  return static_cast<const char*>(cache.tables);
}

void CudaBackend::adamw_update(TensorView param, ConstTensorView grad, TensorView m, TensorView v,
                               std::size_t count, double lr, double beta1, double beta2,
                               double eps, double weight_decay, int step) {
  adamw_update_batch({{param.slice(0, count), grad.slice(0, count), m.slice(0, count), v.slice(0, count), true}},
                     lr, beta1, beta2, eps, weight_decay, step);
}

void CudaBackend::adamw_update_batch(const std::vector<AdamwSegment>& segments, double lr,
                                     double beta1, double beta2, double eps, double weight_decay,
                                     int step) {
  std::vector<std::uintptr_t> key;
  std::vector<AdamwTensor<float>> tensors;
  std::vector<std::size_t> counts;
  for (const AdamwSegment& s : segments) {
    key_segment(key, {s.param, s.grad, s.m, s.v}, s.decayed, "adamw_update");
    tensors.push_back(
        {s.param.as<float>(), s.grad.as<float>(), s.m.as<float>(), s.v.as<float>(), nullptr, s.decayed ? 1 : 0});
    counts.push_back(s.param.count);
  }
  const char* base = multi_tensor_tables(adamw_tables_, std::move(key), tensors.data(),
                                         tensors.size() * sizeof(AdamwTensor<float>), counts);
  if (adamw_tables_.chunk_count == 0) return;
  adamw_multi_tensor(compute(), reinterpret_cast<const AdamwTensor<float>*>(base), base + adamw_tables_.chunks_offset,
                     adamw_tables_.chunk_count, kmath::adamw_scalars(lr, beta1, beta2, eps, weight_decay, step));
}

void CudaBackend::sgd_update(TensorView param, ConstTensorView grad, TensorView momentum_buffer,
                             std::size_t count, double lr, double momentum, double weight_decay) {
  sgd_update_batch({{param.slice(0, count), grad.slice(0, count), momentum_buffer.slice(0, count), true}}, lr,
                   momentum, weight_decay);
}

void CudaBackend::sgd_update_batch(const std::vector<SgdSegment>& segments, double lr, double momentum,
                                   double weight_decay) {
  std::vector<std::uintptr_t> key;
  std::vector<SgdTensor> tensors;
  std::vector<std::size_t> counts;
  for (const SgdSegment& s : segments) {
    key_segment(key, {s.param, s.grad, s.momentum_buffer}, s.decayed, "sgd_update");
    tensors.push_back({s.param.as<float>(), s.grad.as<float>(), s.momentum_buffer.as<float>(), s.decayed ? 1 : 0});
    counts.push_back(s.param.count);
  }
  const char* base = multi_tensor_tables(sgd_tables_, std::move(key), tensors.data(),
                                         tensors.size() * sizeof(SgdTensor), counts);
  if (sgd_tables_.chunk_count == 0) return;
  sgd_multi_tensor(compute(), reinterpret_cast<const SgdTensor*>(base), base + sgd_tables_.chunks_offset,
                   sgd_tables_.chunk_count, kmath::sgd_scalars(lr, momentum, weight_decay));
}

double CudaBackend::sum_of_squares(const std::vector<ConstTensorView>& tensors) {
  std::vector<std::uintptr_t> key;
  std::vector<const float*> pointers;
  std::vector<std::size_t> counts;
  for (ConstTensorView t : tensors) {
    key_segment(key, {t}, true, "sum_of_squares");
    pointers.push_back(t.as<float>());
    counts.push_back(t.count);
  }
  const char* base = multi_tensor_tables(square_sum_tables_, std::move(key), pointers.data(),
                                         pointers.size() * sizeof(const float*), counts);
  const int chunks = square_sum_tables_.chunk_count;
  if (chunks == 0) return 0.0;
  const std::size_t bytes = static_cast<std::size_t>(chunks) * sizeof(double);
  void* partials = allocate(bytes);
  square_sum_partials(compute(), reinterpret_cast<const float* const*>(base), base + square_sum_tables_.chunks_offset,
                      chunks, static_cast<double*>(partials));
  std::vector<double> host(static_cast<std::size_t>(chunks));
  WHALE_CUDA_CHECK(cudaMemcpyAsync(host.data(), partials, bytes, cudaMemcpyDeviceToHost, compute()));
  synchronize(Stream::compute);
  release(partials);
  double total = 0;
  for (double p : host) total += p;  // in chunk order
  return total;
}

}  // namespace whale::exec::cuda

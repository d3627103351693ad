// File: cuda_backend_ops.cpp
// The CUDA backend's ops: GEMMs through cuBLASLt (bias fused as an epilogue), everything else
// through the kernels of cuda_kernels.h, all on the backend's stream (see cuda_backend_impl.h).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"
#include "backend/gpu_host/token_buckets.h"

namespace whale::exec::cuda {
namespace {
void check_targets(const int32_t* targets, int rows, int vocabulary) {
  for (int r = 0; r < rows; ++r)
    if (targets[r] < 0 || targets[r] >= vocabulary)
      throw std::out_of_range("cross-entropy target " + std::to_string(targets[r]) +
                              " outside vocabulary 0.." + std::to_string(vocabulary - 1));
}
}  // namespace

void CudaBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                       const float* b, float* c, bool accumulate, const float* bias) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty product: c = 0, or c unchanged when accumulating
    if (!accumulate) fill_zero(c, static_cast<std::size_t>(m) * n);
    if (bias) bias_add_forward(c, bias, m, n);
    return;
  }
  GemmCall call;
  call.dtype = GemmDtype::kF32;
  call.tf32 = options_.tf32;
  call.trans_a = trans_a;
  call.trans_b = trans_b;
  call.accumulate = accumulate;
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = a;
  call.b = b;
  call.c = c;
  if (bias) {
    call.epilogue = gpu::GemmEpilogue::kBias;
    call.bias = bias;
  }
  gemm_->run(stream_, call);
}

void CudaBackend::matmul(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                         const float* b, float* c, bool accumulate) {
  gemm(trans_a, trans_b, m, n, k, a, b, c, accumulate, nullptr);
}

void CudaBackend::linear_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int rows, int in_channels, int out_channels) {
  gemm(false, true, rows, out_channels, in_channels, inp, weight, out, false, bias);
}

void CudaBackend::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int rows,
                                  int in_channels, int out_channels) {
  if (dinp) gemm(false, false, rows, in_channels, out_channels, dout, weight, dinp, true, nullptr);
  gemm(true, false, out_channels, in_channels, rows, dout, inp, dweight, true, nullptr);
  // The bias gradient by the column-sum kernel, not cuBLASLt's BGRADB epilogue: BGRADB
  // overwrites rather than adds, and the kernel's double sums equal the CPU backend's bits.
  if (dbias) cuda::bias_add_backward(stream_, dbias, dout, rows, out_channels);
}

void CudaBackend::bias_add_forward(float* out, const float* bias, int rows, int channels) {
  cuda::bias_add_forward(stream_, out, bias, rows, channels);
}

void CudaBackend::bias_add_backward(float* dbias, const float* dout, int rows, int channels) {
  cuda::bias_add_backward(stream_, dbias, dout, rows, channels);
}

void CudaBackend::add_forward(float* out, const float* a, const float* b, std::size_t count) {
  cuda::add_forward(stream_, out, a, b, count);
}

void CudaBackend::add_backward(float* da, float* db, const float* dout, std::size_t count) {
  for (float* d : {da, db})
    if (d) cuda::accumulate(stream_, d, dout, count);
}

void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int rows,
                                    int channels) {
  cuda::layernorm_forward(stream_, out, mean, rstd, inp, weight, bias, rows, channels);
}

void CudaBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int rows, int channels) {
  cuda::layernorm_backward(stream_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows,
                           channels);
}

void CudaBackend::gelu_forward(float* out, const float* inp, std::size_t count) {
  cuda::gelu_forward(stream_, out, inp, count);
}

void CudaBackend::gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t count) {
  cuda::gelu_backward(stream_, dinp, inp, dout, count);
}

// Attention: the flash kernels never materialise the probabilities. Forward leaves `probs`
// untouched; backward recomputes the output and each row's log-sum-exp (one more forward) and
// then the gradients, so the interface's probs buffer is not read either.
void CudaBackend::attention_forward(float* out, float* /*probs*/, const float* qkv, int batch,
                                    int sequence, int heads, int head_size) {
  const Scratch lse(*arena_, static_cast<std::size_t>(batch) * heads * sequence * sizeof(float));
  cuda::attention_forward(stream_, out, lse.as<float>(), qkv, batch, sequence, heads, head_size);
}

void CudaBackend::attention_backward(float* dqkv, const float* dout, const float* qkv,
                                     const float* /*probs*/, int batch, int sequence, int heads,
                                     int head_size) {
  const std::size_t rows = static_cast<std::size_t>(batch) * heads * sequence;
  const Scratch out(*arena_, rows * head_size * sizeof(float));
  const Scratch lse(*arena_, rows * sizeof(float)), delta(*arena_, rows * sizeof(float));
  cuda::attention_forward(stream_, out.as<float>(), lse.as<float>(), qkv, batch, sequence, heads,
                          head_size);
  cuda::attention_backward(stream_, dqkv, dout, qkv, out.as<float>(), lse.as<float>(),
                           delta.as<float>(), batch, sequence, heads, head_size);
}

void CudaBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                    const float* wpe, int batch, int sequence, int channels) {
  const auto device_tokens = upload_ints(tokens, static_cast<std::size_t>(batch) * sequence);
  cuda::embedding_forward(stream_, out, device_tokens->as<int32_t>(), wte, wpe, batch, sequence,
                          channels);
}

void CudaBackend::embedding_backward(float* dwte, float* dwpe, const float* dout,
                                     const int32_t* tokens, int batch, int sequence,
                                     int channels) {
  int vocabulary = 0;  // the buckets need an upper bound only
  for (int n = 0; n < batch * sequence; ++n) vocabulary = std::max(vocabulary, tokens[n] + 1);
  const gpu::TokenBuckets buckets = gpu::token_buckets(tokens, batch * sequence, vocabulary);
  const auto bucket_tokens = upload_ints(buckets.tokens.data(), buckets.tokens.size());
  const auto offsets = upload_ints(buckets.offsets.data(), buckets.offsets.size());
  const auto positions = upload_ints(buckets.positions.data(), buckets.positions.size());
  cuda::embedding_backward(stream_, dwte, dwpe, dout, bucket_tokens->as<int32_t>(),
                           offsets->as<int32_t>(), positions->as<int32_t>(),
                           static_cast<int>(buckets.tokens.size()), batch, sequence, channels);
}

double CudaBackend::cross_entropy_forward(const float* logits, const int32_t* targets, int rows,
                                          int vocabulary) {
  check_targets(targets, rows, vocabulary);
  const auto device_targets = upload_ints(targets, static_cast<std::size_t>(rows));
  const Scratch losses(*arena_, static_cast<std::size_t>(rows) * sizeof(float));
  cuda::cross_entropy<float>(stream_, losses.as<float>(), nullptr, logits,
                             device_targets->as<int32_t>(), rows, vocabulary, 0.0f);
  std::vector<float> host(static_cast<std::size_t>(rows));
  download(host.data(), losses.as<float>(), host.size());
  double total = 0.0;  // rows in order: deterministic
  for (float loss : host) total += loss;
  return total;
}

void CudaBackend::cross_entropy_backward(float* dlogits, const float* logits,
                                         const int32_t* targets, int rows, int vocabulary,
                                         double scale) {
  check_targets(targets, rows, vocabulary);
  const auto device_targets = upload_ints(targets, static_cast<std::size_t>(rows));
  const Scratch losses(*arena_, static_cast<std::size_t>(rows) * sizeof(float));
  cuda::cross_entropy<float>(stream_, losses.as<float>(), dlogits, logits,
                             device_targets->as<int32_t>(), rows, vocabulary,
                             static_cast<float>(scale));
}

void CudaBackend::adamw_update(float* param, const float* grad, float* m, float* v,
                               std::size_t count, double lr, double beta1, double beta2,
                               double eps, double weight_decay, int step) {
  const std::vector<gpu::AdamwChunk> chunks = gpu::adamw_chunks({count});
  if (chunks.empty()) return;
  const AdamwTensor<float> tensor{param, grad, m, v, nullptr};
  const Scratch table(*arena_, sizeof tensor), chunk_table(*arena_, chunks.size() * sizeof chunks[0]);
  WHALE_CUDA_CHECK(cudaMemcpyAsync(table.as<void>(), &tensor, sizeof tensor, cudaMemcpyHostToDevice, stream_));
  WHALE_CUDA_CHECK(cudaMemcpyAsync(chunk_table.as<void>(), chunks.data(),
                                   chunks.size() * sizeof chunks[0], cudaMemcpyHostToDevice, stream_));
  adamw_multi_tensor(stream_, table.as<const AdamwTensor<float>>(), chunk_table.as<const void>(),
                     static_cast<int>(chunks.size()),
                     kmath::adamw_scalars(lr, beta1, beta2, eps, weight_decay, step));
  WHALE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host tables may go when we return
}

}  // namespace whale::exec::cuda

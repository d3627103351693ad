// File: test_cuda_low_precision.cpp
// The kernels with bf16 and fp16 storage (fp32 arithmetic; the attention on tensor cores)
// against the CPU backend in fp32:
// normwise within kBf16Tolerance; the multi-tensor AdamW's compute copy is the round-to-nearest
// of the fp32 master weight, bit for bit.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_flash_attention_mma.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/dropout_scalars.h"
#include "backend/gpu_host/adamw_chunks.h"
#include "backend/kernel_math/attention_saved_state.h"
#include "backend/kernel_math/launch_geometry.h"
#include "cuda_test_fixtures.h"

using namespace whale::exec;
using namespace whale::exec::test;

namespace {

/// A device array of `count` T, freed on scope exit.
template <class T>
struct DeviceArray {
  T* data = nullptr;
  std::size_t count;
  explicit DeviceArray(std::size_t n) : count(n) {
    WHALE_CUDA_CHECK(cudaMalloc(&data, n * sizeof(T)));
    WHALE_CUDA_CHECK(cudaMemset(data, 0, n * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

/// Host fp32 values stored on the device as T (rounded by the cast kernel).
template <class T>
std::unique_ptr<DeviceArray<T>> to_device(const std::vector<float>& host) {
  DeviceArray<float> staging(host.size());
  WHALE_CUDA_CHECK(cudaMemcpy(staging.data, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  auto out = std::make_unique<DeviceArray<T>>(host.size());
  cuda::cast(nullptr, out->data, staging.data, host.size());
  WHALE_CUDA_CHECK(cudaDeviceSynchronize());
  return out;
}

template <class T>
std::vector<float> to_host(const DeviceArray<T>& device) {
  DeviceArray<float> staging(device.count);
  cuda::cast(nullptr, staging.data, device.data, device.count);
  std::vector<float> host(device.count);
  WHALE_CUDA_CHECK(cudaMemcpy(host.data(), staging.data, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

template <class T>
void check_gelu() {
  auto cpu = make_reference();
  const std::size_t n = 3000;
  const auto inp = random_vector(n, 1, 4.0f);
  std::vector<float> ref(n);
  cpu->gelu_forward(view(ref), view(inp), n);
  const auto x = to_device<T>(inp);
  DeviceArray<T> out(n);
  cuda::gelu_forward(nullptr, out.data, x->data, n);
  const double error = normwise_error(to_host(out), ref);
  CHECK(error <= kBf16Tolerance);
  CHECK(error > 0.0);  // the storage really rounds
}

}  // namespace

TEST_CASE("GELU in bf16 and fp16 storage") {
  check_gelu<__nv_bfloat16>();
  check_gelu<__half>();
}

TEST_CASE("layernorm forward in bf16 storage") {
  auto cpu = make_reference();
  const int N = 20, C = 80;
  const auto inp = random_vector(N * C, 2, 3.0f), w = random_vector(C, 3), b = random_vector(C, 4);
  std::vector<float> ref(inp.size()), mean(N), rstd(N);
  cpu->layernorm_forward(view(ref), view(mean), view(rstd), view(inp), view(w), view(b), N, C);
  const auto x = to_device<__nv_bfloat16>(inp), dw = to_device<__nv_bfloat16>(w), db = to_device<__nv_bfloat16>(b);
  DeviceArray<__nv_bfloat16> out(inp.size());
  DeviceArray<float> dmean(N), drstd(N);
  cuda::layernorm_forward(nullptr, out.data, dmean.data, drstd.data, x->data, dw->data, db->data, N, C);
  CHECK(normwise_error(to_host(out), ref) <= kBf16Tolerance);
  // The input gradient (8 bf16 columns a 16-byte chunk) added into a bf16 dinp, against the CPU.
  const auto dout = random_vector(N * C, 5), dinp_start = random_vector(N * C, 6);
  std::vector<float> dinp_ref = dinp_start, dweight(C), dbias(C);
  cpu->layernorm_backward(view(dinp_ref), view(dweight), view(dbias), view(dout), view(inp), view(w),
                          view(mean), view(rstd), N, C);
  const auto ddout = to_device<__nv_bfloat16>(dout);
  const auto ddinp = to_device<__nv_bfloat16>(dinp_start);
  DeviceArray<float> ddweight(C), ddbias(C);
  DeviceArray<double> partials(kmath::column_partials_count(N, C));
  cuda::layernorm_backward(nullptr, ddinp->data, ddweight.data, ddbias.data, ddout->data, x->data,
                           dw->data, dmean.data, drstd.data, N, C, partials.data);
  CHECK(normwise_error(to_host(*ddinp), dinp_ref) <= kBf16Tolerance);
}

namespace {

/// Columns [first, first + width) of each row of a (rows, stride) matrix.
std::vector<float> columns(const std::vector<float>& m, int stride, int first, int width) {
  std::vector<float> out;
  for (std::size_t r = 0; r < m.size() / stride; ++r)
    out.insert(out.end(), m.begin() + r * stride + first, m.begin() + r * stride + first + width);
  return out;
}

/// The tensor-core attention (T in bf16 or fp16; head size 64 or 128; grouped-query when
/// KV < NH; S rows, not a multiple of the 64-row tile) forward and backward against the CPU
/// backend in fp32: out, and dq, dk, dv each normwise within kBf16Tolerance (a host emulation
/// of the kernels' bf16 roundings gives 0.003 to 0.006). With `dropout` (its heads the first
/// NH of the model's), both draw its mask.
template <class T>
void check_tensor_core_attention(int HS, int NH, int KV, int S = 90,
                                 const AttentionDropout& dropout = {}) {
  CAPTURE(HS);
  CAPTURE(dropout.site.probability);
  CAPTURE(NH);
  CAPTURE(KV);
  CAPTURE(S);
  auto cpu = make_reference();
  const int B = 2, C = NH * HS, W = (NH + 2 * KV) * HS;
  const std::size_t rows = static_cast<std::size_t>(B) * NH * S;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * S * W, 5);
  const auto dout = random_vector(static_cast<std::size_t>(B) * S * C, 6);
  std::vector<float> ref(static_cast<std::size_t>(B) * S * C), probs(rows * S), ref_dqkv(qkv.size(), 0.0f);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, S, NH, KV, HS, dropout);
  cpu->attention_backward(view(ref_dqkv), view(dout), view(qkv), view(probs), B, S, NH, KV, HS, dropout);
  const kmath::AttentionDropoutScalars drop = attention_dropout_scalars(dropout);
  const auto x = to_device<T>(qkv), dy = to_device<T>(dout);
  DeviceArray<T> out(ref.size()), dx(qkv.size());
  DeviceArray<float> lse(rows), delta(rows);
  REQUIRE(cuda::flash_mma_supports<T>(HS, x->data, dy->data, out.data));
  cuda::attention_forward(nullptr, out.data, lse.data, x->data, B, S, NH, KV, HS, drop);
  cuda::attention_backward(nullptr, dx.data, dy->data, x->data, out.data, lse.data, delta.data, B, S,
                           NH, KV, HS, drop);
  CHECK(normwise_error(to_host(out), ref) <= kBf16Tolerance);
  const auto got = to_host(dx);
  CHECK(normwise_error(columns(got, W, 0, C), columns(ref_dqkv, W, 0, C)) <= kBf16Tolerance);
  CHECK(normwise_error(columns(got, W, C, KV * HS), columns(ref_dqkv, W, C, KV * HS)) <= kBf16Tolerance);
  CHECK(normwise_error(columns(got, W, C + KV * HS, KV * HS), columns(ref_dqkv, W, C + KV * HS, KV * HS)) <=
        kBf16Tolerance);
}

}  // namespace

TEST_CASE("tensor-core flash attention in bf16: head sizes 64 and 128, multi-head and grouped-query") {
  for (int HS : {64, 128}) {
    check_tensor_core_attention<__nv_bfloat16>(HS, 4, 4);
    check_tensor_core_attention<__nv_bfloat16>(HS, 4, 2);
  }
  check_tensor_core_attention<__nv_bfloat16>(64, 2, 1, 300);  // 5 tiles, two heads on one
}

TEST_CASE("tensor-core flash attention with attention dropout draws the CPU backend's mask") {
  AttentionDropout dropout;
  dropout.site = {0xD0, 0.1};
  dropout.first_sample = 5;
  dropout.first_head = 4;  // a tensor-parallel shard's heads 4.. of 8
  dropout.total_heads = 8;
  check_tensor_core_attention<__nv_bfloat16>(64, 4, 2, 150, dropout);
  check_tensor_core_attention<__half>(128, 4, 4, 90, dropout);
}

TEST_CASE("tensor-core flash attention in fp16, head size 64") {
  check_tensor_core_attention<__half>(64, 2, 2);
}

TEST_CASE("fp32 and head size 96 keep the scalar attention path") {
  CHECK_FALSE(cuda::flash_mma_supports<float>(64, nullptr));
  CHECK_FALSE(cuda::flash_mma_supports<__nv_bfloat16>(96, nullptr));
  CHECK(cuda::flash_mma_supports<__nv_bfloat16>(128, nullptr));
}

TEST_CASE("the CUDA backend in bf16: attention through its saved state (no probabilities)") {
  auto cpu = make_reference();
  auto gpu = make_cuda_backend(CudaBackendOptions{0, DType::bf16, false, std::size_t{1} << 30});
  REQUIRE(gpu->attention_recomputes_scores());
  const int B = 1, S = 130, NH = 2, HS = 128, C = NH * HS;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * S * 3 * C, 9);
  const auto dout = random_vector(static_cast<std::size_t>(B) * S * C, 10);
  std::vector<float> ref(static_cast<std::size_t>(B) * S * C), probs(static_cast<std::size_t>(B) * NH * S * S),
      ref_dqkv(qkv.size(), 0.0f);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, S, NH, HS);
  cpu->attention_backward(view(ref_dqkv), view(dout), view(qkv), view(probs), B, S, NH, HS);
  // bf16 tensors of the backend, filled by casting fp32 uploads.
  auto bf16_of = [&](const std::vector<float>& host) {
    Tensor staging(*gpu, host.size(), DType::fp32), t(*gpu, host.size(), DType::bf16);
    gpu->upload(staging.view(), host.data(), Stream::compute);
    gpu->cast(t.view(), staging.view(), Stream::compute);
    gpu->synchronize(Stream::compute);
    return t;
  };
  auto fp32_of = [&](const Tensor& t) {
    Tensor staging(*gpu, t.view().count, DType::fp32);
    gpu->cast(staging.view(), t.view(), Stream::compute);
    std::vector<float> host(t.view().count);
    gpu->download(host.data(), staging.view(), Stream::compute);
    gpu->synchronize(Stream::compute);
    return host;
  };
  const Tensor x = bf16_of(qkv), dy = bf16_of(dout);
  Tensor out = bf16_of(std::vector<float>(ref.size())), dx = bf16_of(std::vector<float>(qkv.size()));
  const std::size_t saved = gpu->attention_saved_count(B, S, NH, HS, DType::bf16);
  // The exact layout: B*NH*S fp32 log-sum-exps, then the (B, S, C) output copy at a 16-byte boundary.
  CHECK(saved == kmath::attention_saved_elements(kmath::attention_saved_state(B, S, NH, HS, 2), 2));
  CHECK(saved == (static_cast<std::size_t>(B) * NH * S * 4 + 15) / 16 * 16 / 2 +
                     static_cast<std::size_t>(B) * S * C);
  // Linear in T, not the (B, NH, T, T) probabilities: at S = 130 the two happen to be equal
  // (2*S + HS == S), at a training length the state is a small fraction of them.
  const int long_S = 1024;
  CHECK(gpu->attention_saved_count(B, long_S, NH, HS, DType::bf16) <
        static_cast<std::size_t>(B) * NH * long_S * long_S / 4);
  Tensor state(*gpu, saved, DType::bf16);
  gpu->attention_forward(out.view(), state.view(), x.view(), B, S, NH, HS);
  gpu->attention_backward(dx.view(), dy.view(), x.view(), state.view(), B, S, NH, HS);
  CHECK(normwise_error(fp32_of(out), ref) <= kBf16Tolerance);
  CHECK(normwise_error(fp32_of(dx), ref_dqkv) <= kBf16Tolerance);
  Tensor small(*gpu, saved - 1, DType::bf16);
  CHECK_THROWS_AS(gpu->attention_forward(out.view(), small.view(), x.view(), B, S, NH, HS),
                  std::invalid_argument);
}

TEST_CASE("fused cross-entropy gradient written in bf16") {
  auto cpu = make_reference();
  const int N = 4, V = 777;
  const auto logits = random_vector(static_cast<std::size_t>(N) * V, 6, 5.0f);
  const std::vector<int32_t> targets = {5, 0, 776, 300};
  std::vector<float> ref(logits.size(), 0.0f);
  cpu->cross_entropy_backward(view(ref), view(logits), view(targets), N, V, 1.0);
  const auto x = to_device<__nv_bfloat16>(logits);
  DeviceArray<__nv_bfloat16> grad(logits.size());
  DeviceArray<float> losses(N);
  DeviceArray<int32_t> device_targets(N);
  WHALE_CUDA_CHECK(cudaMemcpy(device_targets.data, targets.data(), N * sizeof(int32_t), cudaMemcpyHostToDevice));
  cuda::cross_entropy(nullptr, losses.data, grad.data, x->data, device_targets.data, N, V, 1.0f);
  CHECK(normwise_error(to_host(grad), ref) <= kBf16Tolerance);
}

TEST_CASE("multi-tensor AdamW: fp32 master, bf16 gradient, bf16 compute copy") {
  const std::vector<std::size_t> counts = {5000, 7};
  std::vector<std::unique_ptr<DeviceArray<float>>> p, m, v;
  std::vector<std::unique_ptr<DeviceArray<__nv_bfloat16>>> g, copy;
  std::vector<cuda::AdamwTensor<__nv_bfloat16>> table;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    p.push_back(to_device<float>(random_vector(counts[t], 10 + t)));
    m.push_back(std::make_unique<DeviceArray<float>>(counts[t]));
    v.push_back(std::make_unique<DeviceArray<float>>(counts[t]));
    g.push_back(to_device<__nv_bfloat16>(random_vector(counts[t], 20 + t)));
    copy.push_back(std::make_unique<DeviceArray<__nv_bfloat16>>(counts[t]));
    table.push_back({p[t]->data, g[t]->data, m[t]->data, v[t]->data, copy[t]->data, 1});
  }
  const auto chunks = gpu::adamw_chunks(counts);
  DeviceArray<cuda::AdamwTensor<__nv_bfloat16>> device_table(table.size());
  DeviceArray<gpu::AdamwChunk> device_chunks(chunks.size());
  WHALE_CUDA_CHECK(cudaMemcpy(device_table.data, table.data(), table.size() * sizeof table[0], cudaMemcpyHostToDevice));
  WHALE_CUDA_CHECK(cudaMemcpy(device_chunks.data, chunks.data(), chunks.size() * sizeof chunks[0], cudaMemcpyHostToDevice));
  cuda::adamw_multi_tensor(nullptr, device_table.data, device_chunks.data, static_cast<int>(chunks.size()),
                           kmath::adamw_scalars(1e-3, 0.9, 0.95, 1e-8, 0.1, 1));
  auto cpu = make_reference();
  for (std::size_t t = 0; t < counts.size(); ++t) {
    std::vector<float> rp = random_vector(counts[t], 10 + t), rm(counts[t]), rv(counts[t]);
    const std::vector<float> rg = to_host(*g[t]);  // the bf16 gradient as the kernel read it
    cpu->adamw_update(view(rp), view(rg), view(rm), view(rv), counts[t], 1e-3, 0.9, 0.95, 1e-8, 0.1, 1);
    const std::vector<float> master = to_host(*p[t]);
    CHECK(normwise_error(master, rp) <= kDeviceFp32Tolerance);
    CHECK(to_host(*copy[t]) == through_bf16(master));
  }
}

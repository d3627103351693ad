// File: test_cuda_low_precision.cpp
// The kernels with bf16 and fp16 storage (fp32 arithmetic) against the CPU backend in fp32:
// normwise within kBf16Tolerance; the multi-tensor AdamW's compute copy is the round-to-nearest
// of the fp32 master weight, bit for bit.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/gpu_host/adamw_chunks.h"
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
}

TEST_CASE("flash attention forward in bf16 storage") {
  auto cpu = make_reference();
  const int B = 1, NH = 4, T = 90, HS = 64, C = NH * HS;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * 3 * C, 5);
  std::vector<float> ref(static_cast<std::size_t>(B) * T * C), probs(static_cast<std::size_t>(B) * NH * T * T);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, T, NH, HS);
  const auto x = to_device<__nv_bfloat16>(qkv);
  DeviceArray<__nv_bfloat16> out(ref.size());
  DeviceArray<float> lse(static_cast<std::size_t>(B) * NH * T);
  cuda::attention_forward(nullptr, out.data, lse.data, x->data, B, T, NH, NH, HS);
  CHECK(normwise_error(to_host(out), ref) <= kBf16Tolerance);
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
    table.push_back({p[t]->data, g[t]->data, m[t]->data, v[t]->data, copy[t]->data});
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

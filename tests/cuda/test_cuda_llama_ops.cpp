// File: test_cuda_llama_ops.cpp
// The Llama ops of the CUDA backend (RMSNorm, SwiGLU, RoPE, grouped-query attention), forward
// and backward, on the GPU against the CPU backend: normwise within kDeviceFp32Tolerance.
#include <doctest/doctest.h>

#include <vector>

#include "cuda_test_fixtures.h"

using namespace whale::exec;
using namespace whale::exec::test;

TEST_CASE("RMSNorm forward and backward") {
  Backends be;
  const int N = 45, C = 96;
  const Twin inp = be.tensor(random_vector(N * C, 201, 3.0f)), w = be.tensor(random_vector(C, 202)),
             dout = be.tensor(random_vector(N * C, 203));
  Twin out = be.tensor(std::vector<float>(N * C)), rstd = be.tensor(std::vector<float>(N));
  be.cpu->rmsnorm_forward(out.on_cpu, rstd.on_cpu, inp.on_cpu, w.on_cpu, N, C);
  be.gpu->rmsnorm_forward(out.on_gpu, rstd.on_gpu, inp.on_gpu, w.on_gpu, N, C);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  CHECK(rstd.error() <= kDeviceFp32Tolerance);
  Twin dinp = be.tensor(random_vector(N * C, 204)), dw = be.tensor(random_vector(C, 205));
  be.cpu->rmsnorm_backward(dinp.on_cpu, dw.on_cpu, dout.on_cpu, inp.on_cpu, w.on_cpu, rstd.on_cpu, N, C);
  be.gpu->rmsnorm_backward(dinp.on_gpu, dw.on_gpu, dout.on_gpu, inp.on_gpu, w.on_gpu, rstd.on_gpu, N, C);
  CHECK(dinp.error() <= kDeviceFp32Tolerance);
  CHECK(dw.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("SwiGLU forward and backward") {
  Backends be;
  const std::size_t n = 5000;
  const Twin gate = be.tensor(random_vector(n, 211, 4.0f)), up = be.tensor(random_vector(n, 212)),
             dout = be.tensor(random_vector(n, 213));
  Twin out = be.tensor(std::vector<float>(n)), dgate = be.tensor(random_vector(n, 214)),
       dup = be.tensor(random_vector(n, 215));
  be.cpu->swiglu_forward(out.on_cpu, gate.on_cpu, up.on_cpu, n);
  be.gpu->swiglu_forward(out.on_gpu, gate.on_gpu, up.on_gpu, n);
  be.cpu->swiglu_backward(dgate.on_cpu, dup.on_cpu, gate.on_cpu, up.on_cpu, dout.on_cpu, n);
  be.gpu->swiglu_backward(dgate.on_gpu, dup.on_gpu, gate.on_gpu, up.on_gpu, dout.on_gpu, n);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  CHECK(dgate.error() <= kDeviceFp32Tolerance);
  CHECK(dup.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("RoPE forward and backward, Llama 3's theta") {
  Backends be;
  const int B = 2, T = 70, heads = 6, HS = 64, W = 8 * HS;  // two heads stay
  Twin x = be.tensor(random_vector(static_cast<std::size_t>(B) * T * W, 221));
  be.cpu->rope_forward(x.on_cpu, B, T, W, heads, HS, 500000.0);
  be.gpu->rope_forward(x.on_gpu, B, T, W, heads, HS, 500000.0);
  CHECK(x.error() <= kDeviceFp32Tolerance);
  be.cpu->rope_backward(x.on_cpu, B, T, W, heads, HS, 500000.0);
  be.gpu->rope_backward(x.on_gpu, B, T, W, heads, HS, 500000.0);
  CHECK(x.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("grouped-query flash attention forward and backward, 8 query heads on 2 key/value heads") {
  Backends be;
  const int B = 2, NH = 8, KV = 2, T = 70, HS = 64, C = NH * HS, W = (NH + 2 * KV) * HS;
  const Twin qkv = be.tensor(random_vector(static_cast<std::size_t>(B) * T * W, 231));
  const Twin dout = be.tensor(random_vector(static_cast<std::size_t>(B) * T * C, 232));
  Twin out = be.tensor(std::vector<float>(static_cast<std::size_t>(B) * T * C));
  Twin probs = be.attention_state(B, T, NH, HS);
  Twin dqkv = be.tensor(random_vector(qkv.count, 233));
  be.cpu->attention_forward(out.on_cpu, probs.on_cpu, qkv.on_cpu, B, T, NH, KV, HS);
  be.gpu->attention_forward(out.on_gpu, probs.on_gpu, qkv.on_gpu, B, T, NH, KV, HS);
  be.cpu->attention_backward(dqkv.on_cpu, dout.on_cpu, qkv.on_cpu, probs.on_cpu, B, T, NH, KV, HS);
  be.gpu->attention_backward(dqkv.on_gpu, dout.on_gpu, qkv.on_gpu, probs.on_gpu, B, T, NH, KV, HS);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  CHECK(dqkv.error() <= kDeviceFp32Tolerance);
}

// File: test_kernel_ops.cpp
// The CUDA kernels' arithmetic, run on the host through their twins (kernel_twins.h), against
// the CPU backend op by op: fp32 within kFp32Tolerance (normwise), bf16-stored tensors within
// kBf16Tolerance. Sizes are odd on purpose: rows not a multiple of a warp, a vocabulary past
// one block's stride, a sequence over two attention tiles.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "kernel_fixtures.h"
#include "backend/dropout_scalars.h"
#include "backend/kernel_math/online_softmax.h"
#include "kernel_twins.h"

using namespace whale::exec;
using namespace whale::exec::test;

namespace {
constexpr int kRows = 5, kChannels = 70;
}

TEST_CASE("layernorm forward and backward: warp-row kernels equal the CPU backend") {
  auto cpu = make_reference();
  const auto inp = random_vector(kRows * kChannels, 1, 2.0f);
  const auto weight = random_vector(kChannels, 2), bias = random_vector(kChannels, 3);
  const auto dout = random_vector(kRows * kChannels, 4);
  std::vector<float> out(inp.size()), mean(kRows), rstd(kRows), ref_out(inp.size()),
      ref_mean(kRows), ref_rstd(kRows);
  cpu->layernorm_forward(view(ref_out), view(ref_mean), view(ref_rstd), view(inp),
                         view(weight), view(bias), kRows, kChannels);
  twin_layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                         bias.data(), kRows, kChannels);
  CHECK(normwise_error(out, ref_out) <= kFp32Tolerance);
  CHECK(normwise_error(mean, ref_mean) <= kFp32Tolerance);
  CHECK(normwise_error(rstd, ref_rstd) <= kFp32Tolerance);

  // Backward adds into non-zero gradients.
  auto dinp = random_vector(inp.size(), 5), dweight = random_vector(kChannels, 6),
       dbias = random_vector(kChannels, 7);
  auto ref_dinp = dinp, ref_dweight = dweight, ref_dbias = dbias;
  cpu->layernorm_backward(view(ref_dinp), view(ref_dweight), view(ref_dbias), view(dout),
                          view(inp), view(weight), view(ref_mean), view(ref_rstd), kRows,
                          kChannels);
  twin_layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                          weight.data(), mean.data(), rstd.data(), kRows, kChannels);
  CHECK(normwise_error(dinp, ref_dinp) <= kFp32Tolerance);
  CHECK(normwise_error(dweight, ref_dweight) <= kFp32Tolerance);
  CHECK(dbias == ref_dbias);  // same double sums in the same order: bit-exact
}

TEST_CASE("layernorm forward in bf16 storage stays within the bf16 tolerance") {
  auto cpu = make_reference();
  const auto inp = random_vector(kRows * kChannels, 11, 2.0f);
  const auto weight = random_vector(kChannels, 12), bias = random_vector(kChannels, 13);
  std::vector<float> out(inp.size()), mean(kRows), rstd(kRows), ref(inp.size());
  cpu->layernorm_forward(view(ref), view(mean), view(rstd), view(inp), view(weight),
                         view(bias), kRows, kChannels);
  const auto inp16 = through_bf16(inp), weight16 = through_bf16(weight), bias16 = through_bf16(bias);
  twin_layernorm_forward(out.data(), mean.data(), rstd.data(), inp16.data(), weight16.data(),
                         bias16.data(), kRows, kChannels);
  const double error = normwise_error(through_bf16(out), ref);
  CHECK(error <= kBf16Tolerance);
  CHECK(error > kFp32Tolerance);  // the rounding is really there
}

TEST_CASE("GELU forward and backward equal the CPU backend") {
  auto cpu = make_reference();
  const std::size_t n = 1000;
  const auto inp = random_vector(n, 21, 3.0f), dout = random_vector(n, 22);
  std::vector<float> out(n), ref(n);
  cpu->gelu_forward(view(ref), view(inp), n);
  twin_gelu_forward(out.data(), inp.data(), n);
  CHECK(normwise_error(out, ref) <= kFp32Tolerance);
  auto dinp = random_vector(n, 23), ref_dinp = dinp;
  cpu->gelu_backward(view(ref_dinp), view(inp), view(dout), n);
  twin_gelu_backward(dinp.data(), inp.data(), dout.data(), n);
  CHECK(normwise_error(dinp, ref_dinp) <= kFp32Tolerance);
}

TEST_CASE("bias add forward and backward equal the CPU backend bit for bit") {
  auto cpu = make_reference();
  const auto bias = random_vector(kChannels, 31), dout = random_vector(kRows * kChannels, 32);
  auto out = random_vector(kRows * kChannels, 33), ref = out;
  cpu->bias_add_forward(view(ref), view(bias), kRows, kChannels);
  twin_bias_add_forward(out.data(), bias.data(), kRows, kChannels);
  CHECK(out == ref);
  auto dbias = random_vector(kChannels, 34), ref_dbias = dbias;
  cpu->bias_add_backward(view(ref_dbias), view(dout), kRows, kChannels);
  twin_bias_add_backward(dbias.data(), dout.data(), kRows, kChannels);
  CHECK(dbias == ref_dbias);
}

TEST_CASE("embedding forward and deterministic backward equal the CPU backend bit for bit") {
  auto cpu = make_reference();
  const int B = 2, T = 3, C = 4, V = 5;
  const std::vector<int32_t> tokens = {3, 1, 3, 0, 3, 1};  // repeats: the order matters
  const auto wte = random_vector(V * C, 41), wpe = random_vector(T * C, 42);
  std::vector<float> out(B * T * C), ref(out.size());
  cpu->embedding_forward(view(ref), view(tokens), view(wte), view(wpe), B, T, C);
  twin_embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  CHECK(out == ref);
  const auto dout = random_vector(out.size(), 43);
  auto dwte = random_vector(V * C, 44), dwpe = random_vector(T * C, 45);
  auto ref_dwte = dwte, ref_dwpe = dwpe;
  cpu->embedding_backward(view(ref_dwte), view(ref_dwpe), view(dout), view(tokens), B, T, C);
  twin_embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, V);
  CHECK(dwte == ref_dwte);
  CHECK(dwpe == ref_dwpe);
}

TEST_CASE("embedding without a position table (Llama): each row its token's, or zero for another rank's") {
  auto cpu = make_reference();
  const int B = 2, T = 2, C = 3, V = 3;
  const std::vector<int32_t> tokens = {2, -1, 2, 0};
  const std::vector<float> wte = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> out(B * T * C, -1.0f), ref(out.size(), -1.0f);
  cpu->embedding_forward(view(ref), view(tokens), view(wte), ConstTensorView{}, B, T, C);
  twin_embedding_forward(out.data(), tokens.data(), wte.data(), nullptr, B, T, C);
  CHECK(ref == std::vector<float>{7, 8, 9, 0, 0, 0, 7, 8, 9, 1, 2, 3});
  CHECK(out == ref);
  const std::vector<float> dout = {1, 1, 1, 5, 5, 5, 2, 3, 4, 10, 20, 30};
  std::vector<float> dwte(V * C, 0.5f), ref_dwte = dwte;
  cpu->embedding_backward(view(ref_dwte), TensorView{}, view(dout), view(tokens), B, T, C);
  twin_embedding_backward(dwte.data(), nullptr, dout.data(), tokens.data(), B, T, C, V);
  // Token 0 gets row 3; token 2 rows 0 and 2 (in row order); token 1 and row 1 nothing.
  CHECK(ref_dwte == std::vector<float>{10.5f, 20.5f, 30.5f, 0.5f, 0.5f, 0.5f, 3.5f, 4.5f, 5.5f});
  CHECK(dwte == ref_dwte);
}

TEST_CASE("fused softmax + cross-entropy: loss and gradient equal the CPU backend") {
  auto cpu = make_reference();
  const int N = 3, V = 300;
  const auto logits = random_vector(N * V, 51, 4.0f);
  const std::vector<int32_t> targets = {0, 299, 137};
  std::vector<float> losses(N);
  auto dlogits = random_vector(N * V, 52), ref_dlogits = dlogits;
  const float scale = 1.0f / 3.0f;
  twin_cross_entropy(losses.data(), dlogits.data(), logits.data(), targets.data(), N, V, scale);
  const double ref_loss = cpu->cross_entropy_forward(view(logits), view(targets), N, V);
  cpu->cross_entropy_backward(view(ref_dlogits), view(logits), view(targets), N, V, scale);
  double loss = 0.0;
  for (float l : losses) loss += l;
  CHECK(loss == doctest::Approx(ref_loss).epsilon(kFp32Tolerance));
  CHECK(normwise_error(dlogits, ref_dlogits) <= kFp32Tolerance);
}

TEST_CASE("embedding of a vocabulary slice: negative tokens add only the position, and no gradient row") {
  auto cpu = make_reference();
  const int B = 2, T = 3, C = 4, V = 3;  // a slice of 3 rows; -1 marks another rank's token
  const std::vector<int32_t> tokens = {2, -1, 2, 0, -1, -1};
  const auto wte = random_vector(V * C, 46), wpe = random_vector(T * C, 47);
  std::vector<float> out(B * T * C), ref(out.size());
  cpu->embedding_forward(view(ref), view(tokens), view(wte), view(wpe), B, T, C);
  twin_embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  CHECK(out == ref);
  CHECK(std::vector<float>(ref.begin() + C, ref.begin() + 2 * C) == std::vector<float>(wpe.begin() + C, wpe.begin() + 2 * C));
  const auto dout = random_vector(out.size(), 48);
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C, 0.0f), ref_dwte = dwte, ref_dwpe = dwpe;
  cpu->embedding_backward(view(ref_dwte), view(ref_dwpe), view(dout), view(tokens), B, T, C);
  twin_embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, V);
  CHECK(dwte == ref_dwte);
  CHECK(dwpe == ref_dwpe);
  CHECK(std::vector<float>(ref_dwte.begin() + C, ref_dwte.begin() + 2 * C) == std::vector<float>(C, 0.0f));  // row 1: no token
}

TEST_CASE("vocabulary-slice cross-entropy kernels: statistics and gradient equal the CPU backend") {
  auto cpu = make_reference();
  const int N = 3, V = 300;
  const auto logits = random_vector(N * V, 53, 4.0f);
  const std::vector<int32_t> targets = {0, -1, 137};  // row 1's target in another slice
  std::vector<float> statistics(N * 4), ref_statistics(N * 4);
  twin_cross_entropy_shard_statistics(statistics.data(), logits.data(), targets.data(), N, V);
  cpu->cross_entropy_shard_statistics(view(logits), view(targets), N, V, view(ref_statistics));
  for (int r = 0; r < N; ++r) {
    CHECK(statistics[4 * r] == ref_statistics[4 * r]);  // the max: exact
    CHECK(statistics[4 * r + 1] == doctest::Approx(static_cast<double>(ref_statistics[4 * r + 1]) + ref_statistics[4 * r + 2]).epsilon(kFp32Tolerance));
    CHECK(statistics[4 * r + 3] == ref_statistics[4 * r + 3]);
  }
  CHECK(ref_statistics[4 * 1 + 3] == 0.0f);
  const std::vector<float> log_sum_exp = {5.5f, 1e-7f, 6.25f, 0.0f, 5.0f, -2e-7f};
  auto gradient = logits, ref_gradient = logits;
  const float scale = 0.25f;
  twin_cross_entropy_shard_backward(gradient.data(), targets.data(), log_sum_exp.data(), N, V, scale);
  cpu->cross_entropy_shard_backward_in_place(view(ref_gradient), view(targets), view(log_sum_exp), N, V, scale);
  CHECK(normwise_error(gradient, ref_gradient) <= kFp32Tolerance);
}

TEST_CASE("cross-entropy: a target outside the vocabulary gives its row a NaN loss, unread") {
  const int N = 3, V = 4;
  // Row 1 is uniform: its loss is log 4 whatever its target in range.
  const std::vector<float> logits = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0};
  const std::vector<int32_t> targets = {-1, 2, 4};
  std::vector<float> losses(N);
  twin_cross_entropy(losses.data(), nullptr, logits.data(), targets.data(), N, V, 0.0f);
  CHECK(std::isnan(losses[0]));
  CHECK(losses[1] == doctest::Approx(std::log(4.0)).epsilon(1e-6));
  CHECK(std::isnan(losses[2]));
  CHECK(kmath::target_in_vocabulary(0, V));
  CHECK(kmath::target_in_vocabulary(3, V));
  CHECK_FALSE(kmath::target_in_vocabulary(4, V));
  CHECK_FALSE(kmath::target_in_vocabulary(-1, V));
}

TEST_CASE("flash attention forward and backward equal the CPU backend's materialised softmax") {
  auto cpu = make_reference();
  const int B = 2, NH = 2, T = 37, HS = 8, C = NH * HS;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * 3 * C, 61);
  const auto dout = random_vector(static_cast<std::size_t>(B) * T * C, 62);
  std::vector<float> out(dout.size()), ref(dout.size()), lse(static_cast<std::size_t>(B) * NH * T);
  std::vector<float> probs(static_cast<std::size_t>(B) * NH * T * T);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, T, NH, HS);
  twin_attention_forward(out.data(), lse.data(), qkv.data(), B, T, NH, NH, HS);
  CHECK(normwise_error(out, ref) <= kFp32Tolerance);
  auto dqkv = random_vector(qkv.size(), 63), ref_dqkv = dqkv;
  cpu->attention_backward(view(ref_dqkv), view(dout), view(qkv), view(probs), B, T, NH, HS);
  twin_attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, NH, NH, HS);
  CHECK(normwise_error(dqkv, ref_dqkv) <= kFp32Tolerance);
}

TEST_CASE("grouped-query flash attention (4 query heads, 2 key/value heads) equals the CPU backend") {
  auto cpu = make_reference();
  const int B = 2, NH = 4, KV = 2, T = 37, HS = 8, C = NH * HS, W = (NH + 2 * KV) * HS;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * W, 64);
  const auto dout = random_vector(static_cast<std::size_t>(B) * T * C, 65);
  std::vector<float> out(dout.size()), ref(dout.size()), lse(static_cast<std::size_t>(B) * NH * T);
  std::vector<float> probs(static_cast<std::size_t>(B) * NH * T * T);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, T, NH, KV, HS);
  twin_attention_forward(out.data(), lse.data(), qkv.data(), B, T, NH, KV, HS);
  CHECK(normwise_error(out, ref) <= kFp32Tolerance);
  auto dqkv = random_vector(qkv.size(), 66), ref_dqkv = dqkv;
  cpu->attention_backward(view(ref_dqkv), view(dout), view(qkv), view(probs), B, T, NH, KV, HS);
  twin_attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, NH, KV, HS);
  CHECK(normwise_error(dqkv, ref_dqkv) <= kFp32Tolerance);
}

TEST_CASE("attention dropout: the flash kernels' masked forward and backward equal the CPU backend's") {
  // Grouped-query heads 2..5 of a model of 8 (a tensor-parallel shard), samples 3 and 4 of the
  // global batch, p = 0.3: both draw the mask of dropout_site.h from the same rows and columns.
  auto cpu = make_reference();
  const int B = 2, NH = 4, KV = 2, T = 37, HS = 8, C = NH * HS, W = (NH + 2 * KV) * HS;
  AttentionDropout dropout;
  dropout.site = {0x5EED, 0.3};
  dropout.first_sample = 3;
  dropout.first_head = 2;
  dropout.total_heads = 8;
  const kmath::AttentionDropoutScalars drop = attention_dropout_scalars(dropout);
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * W, 67);
  const auto dout = random_vector(static_cast<std::size_t>(B) * T * C, 68);
  std::vector<float> out(dout.size()), ref(dout.size()), plain(dout.size());
  std::vector<float> lse(static_cast<std::size_t>(B) * NH * T), probs(static_cast<std::size_t>(B) * NH * T * T);
  cpu->attention_forward(view(plain), view(probs), view(qkv), B, T, NH, KV, HS);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, T, NH, KV, HS, dropout);
  twin_attention_forward(out.data(), lse.data(), qkv.data(), B, T, NH, KV, HS, drop);
  CHECK(normwise_error(out, ref) <= kFp32Tolerance);
  CHECK(normwise_error(plain, ref) > 0.1);  // the mask changes the output
  auto dqkv = random_vector(qkv.size(), 69), ref_dqkv = dqkv;
  cpu->attention_backward(view(ref_dqkv), view(dout), view(qkv), view(probs), B, T, NH, KV, HS, dropout);
  twin_attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, NH, KV, HS, drop);
  CHECK(normwise_error(dqkv, ref_dqkv) <= kFp32Tolerance);
}

TEST_CASE("the dropout kernel's element indexing equals the CPU backend's rows and columns") {
  auto cpu = make_reference();
  const DropoutSite site{0xABCDEF, 0.25};
  const auto data = random_vector(kRows * kChannels, 104);
  auto ref = data, twin = data;
  cpu->dropout(view(ref), site, 1000, kRows, kChannels);
  twin_dropout(twin.data(), dropout_scalars(site), 1000, kRows, kChannels);
  CHECK(twin == ref);
}

TEST_CASE("RMSNorm forward and backward: warp-row kernels equal the CPU backend") {
  auto cpu = make_reference();
  const auto inp = random_vector(kRows * kChannels, 101, 2.0f);
  const auto weight = random_vector(kChannels, 102), dout = random_vector(kRows * kChannels, 103);
  std::vector<float> out(inp.size()), rstd(kRows), ref_out(inp.size()), ref_rstd(kRows);
  cpu->rmsnorm_forward(view(ref_out), view(ref_rstd), view(inp), view(weight), kRows, kChannels);
  twin_rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), kRows, kChannels);
  CHECK(normwise_error(out, ref_out) <= kFp32Tolerance);
  CHECK(normwise_error(rstd, ref_rstd) <= kFp32Tolerance);
  auto dinp = random_vector(inp.size(), 104), dweight = random_vector(kChannels, 105);
  auto ref_dinp = dinp, ref_dweight = dweight;
  cpu->rmsnorm_backward(view(ref_dinp), view(ref_dweight), view(dout), view(inp), view(weight),
                        view(ref_rstd), kRows, kChannels);
  twin_rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(),
                        rstd.data(), kRows, kChannels);
  CHECK(normwise_error(dinp, ref_dinp) <= kFp32Tolerance);
  CHECK(normwise_error(dweight, ref_dweight) <= kFp32Tolerance);
}

TEST_CASE("SwiGLU forward and backward equal the CPU backend bit for bit") {
  auto cpu = make_reference();
  const std::size_t n = 1000;
  const auto gate = random_vector(n, 111, 4.0f), up = random_vector(n, 112), dout = random_vector(n, 113);
  std::vector<float> out(n), ref(n);
  cpu->swiglu_forward(view(ref), view(gate), view(up), n);
  twin_swiglu_forward(out.data(), gate.data(), up.data(), n);
  CHECK(out == ref);
  auto dgate = random_vector(n, 114), dup = random_vector(n, 115);
  auto ref_dgate = dgate, ref_dup = dup;
  cpu->swiglu_backward(view(ref_dgate), view(ref_dup), view(gate), view(up), view(dout), n);
  twin_swiglu_backward(dgate.data(), dup.data(), gate.data(), up.data(), dout.data(), n);
  CHECK(dgate == ref_dgate);
  CHECK(dup == ref_dup);
}

TEST_CASE("RoPE forward and backward equal the CPU backend bit for bit") {
  auto cpu = make_reference();
  const int B = 2, T = 7, heads = 3, HS = 8, W = 4 * HS;  // the last head is not rotated
  const auto x = random_vector(static_cast<std::size_t>(B) * T * W, 121);
  for (bool inverse : {false, true}) {
    auto mine = x, ref = x;
    if (inverse)
      cpu->rope_backward(view(ref), B, T, W, heads, HS, 10000.0);
    else
      cpu->rope_forward(view(ref), B, T, W, heads, HS, 10000.0);
    twin_rope(mine.data(), B, T, W, heads, HS, 10000.0, inverse);
    CHECK(mine == ref);
  }
}

TEST_CASE("flash attention with bf16-stored q, k, v stays within the bf16 tolerance") {
  auto cpu = make_reference();
  const int B = 1, NH = 2, T = 40, HS = 16, C = NH * HS;
  const auto qkv = random_vector(static_cast<std::size_t>(B) * T * 3 * C, 71);
  std::vector<float> out(static_cast<std::size_t>(B) * T * C), ref(out.size()),
      lse(static_cast<std::size_t>(B) * NH * T), probs(static_cast<std::size_t>(B) * NH * T * T);
  cpu->attention_forward(view(ref), view(probs), view(qkv), B, T, NH, HS);
  twin_attention_forward(out.data(), lse.data(), through_bf16(qkv).data(), B, T, NH, NH, HS);
  CHECK(normwise_error(through_bf16(out), ref) <= kBf16Tolerance);
}

TEST_CASE("multi-tensor AdamW over chunked tensors equals the CPU backend's update") {
  auto cpu = make_reference();
  const std::vector<std::size_t> counts = {5000, 3, 4097};  // spans chunk boundaries
  std::vector<std::vector<float>> p, g, m, v, rp, rm, rv;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    p.push_back(random_vector(counts[t], 80 + t));
    g.push_back(random_vector(counts[t], 90 + t));
    m.push_back(random_vector(counts[t], 100 + t, 0.1f));
    v.push_back(through_bf16(random_vector(counts[t], 110 + t, 0.01f)));
    for (float& x : v.back()) x = x * x;  // second moments are non-negative
  }
  rp = p, rm = m, rv = v;
  std::vector<float*> pp, mp, vp;
  std::vector<const float*> gp;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    pp.push_back(p[t].data());
    gp.push_back(g[t].data());
    mp.push_back(m[t].data());
    vp.push_back(v[t].data());
    cpu->adamw_update(view(rp[t]), view(g[t]), view(rm[t]), view(rv[t]), counts[t], 1e-3,
                      0.9, 0.95, 1e-8, 0.1, 3);
  }
  twin_adamw(pp, gp, mp, vp, counts, 1e-3, 0.9, 0.95, 1e-8, 0.1, 3);
  for (std::size_t t = 0; t < counts.size(); ++t) {
    CHECK(normwise_error(p[t], rp[t]) <= kFp32Tolerance);
    CHECK(normwise_error(m[t], rm[t]) <= kFp32Tolerance);
    CHECK(normwise_error(v[t], rv[t]) <= kFp32Tolerance);
  }
}

TEST_CASE("multi-tensor SGD over chunked tensors equals the CPU backend's update") {
  auto cpu = make_reference();
  const std::vector<std::size_t> counts = {5000, 3, 4097};  // spans chunk boundaries
  std::vector<std::vector<float>> p, g, b, rp, rb;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    p.push_back(random_vector(counts[t], 120 + t));
    g.push_back(random_vector(counts[t], 130 + t));
    b.push_back(random_vector(counts[t], 140 + t, 0.1f));
  }
  rp = p, rb = b;
  std::vector<float*> pp, bp;
  std::vector<const float*> gp;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    pp.push_back(p[t].data());
    gp.push_back(g[t].data());
    bp.push_back(b[t].data());
    cpu->sgd_update(view(rp[t]), view(g[t]), view(rb[t]), counts[t], 1e-2, 0.9, 0.1);
  }
  twin_sgd(pp, gp, bp, counts, 1e-2, 0.9, 0.1);
  for (std::size_t t = 0; t < counts.size(); ++t) {
    CHECK(normwise_error(p[t], rp[t]) <= kFp32Tolerance);
    CHECK(normwise_error(b[t], rb[t]) <= kFp32Tolerance);
  }
}

TEST_CASE("the sum-of-squares kernel's chunked order equals the CPU backend's sum") {
  auto cpu = make_reference();
  const std::vector<std::size_t> counts = {5000, 3, 4097};  // spans chunk boundaries
  std::vector<std::vector<float>> x;
  std::vector<const float*> pointers;
  std::vector<ConstTensorView> views;
  for (std::size_t t = 0; t < counts.size(); ++t) x.push_back(random_vector(counts[t], 150 + t));
  for (const std::vector<float>& v : x) {
    pointers.push_back(v.data());
    views.push_back(view(v));
  }
  CHECK(twin_sum_of_squares(pointers, counts) == doctest::Approx(cpu->sum_of_squares(views)).epsilon(1e-12));
}

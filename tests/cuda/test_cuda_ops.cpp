// File: test_cuda_ops.cpp
// Every op of the CUDA backend, forward and backward, on the GPU against the CPU backend:
// normwise within kDeviceFp32Tolerance; the embedding and bias gradients bit for bit.
#include <doctest/doctest.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "cuda_test_fixtures.h"

using namespace whale::exec;
using namespace whale::exec::test;

TEST_CASE("matmul: the four transpose combinations, with and without accumulation") {
  Backends be;
  const int m = 37, n = 29, k = 53;
  const Twin a = be.tensor(random_vector(m * k, 1)), b = be.tensor(random_vector(k * n, 2));
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        Twin c = be.tensor(random_vector(m * n, 3));
        be.cpu->matmul(ta, tb, m, n, k, a.on_cpu, b.on_cpu, c.on_cpu, acc);
        be.gpu->matmul(ta, tb, m, n, k, a.on_gpu, b.on_gpu, c.on_gpu, acc);
        CHECK(c.error() <= kDeviceFp32Tolerance);
      }
}

TEST_CASE("linear forward (bias epilogue) and backward") {
  Backends be;
  const int N = 24, C = 40, OC = 72;
  const Twin inp = be.tensor(random_vector(N * C, 11)), w = be.tensor(random_vector(OC * C, 12)),
             bias = be.tensor(random_vector(OC, 13)), dout = be.tensor(random_vector(N * OC, 14));
  Twin out = be.tensor(std::vector<float>(N * OC));
  be.cpu->linear_forward(out.on_cpu, inp.on_cpu, w.on_cpu, bias.on_cpu, N, C, OC);
  be.gpu->linear_forward(out.on_gpu, inp.on_gpu, w.on_gpu, bias.on_gpu, N, C, OC);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  Twin dinp = be.tensor(random_vector(N * C, 15)), dw = be.tensor(random_vector(OC * C, 16)),
       db = be.tensor(random_vector(OC, 17));
  be.cpu->linear_backward(dinp.on_cpu, dw.on_cpu, db.on_cpu, dout.on_cpu, inp.on_cpu, w.on_cpu, N, C, OC);
  be.gpu->linear_backward(dinp.on_gpu, dw.on_gpu, db.on_gpu, dout.on_gpu, inp.on_gpu, w.on_gpu, N, C, OC);
  CHECK(dinp.error() <= kDeviceFp32Tolerance);
  CHECK(dw.error() <= kDeviceFp32Tolerance);
  CHECK(db.gpu_values() == db.cpu_values());
}

TEST_CASE("linear forward and backward over a vocabulary of misaligned rows (padded GEMM copies)") {
  // 16411 fp32 entries a row are not 16-byte aligned, and the (64, 16411) logits and their
  // gradient pass 4 MiB: the backend runs the products at padded sizes (gpu::padded_gemm_dims).
  Backends be;
  const int N = 64, C = 32, V = 16411;
  const Twin inp = be.tensor(random_vector(N * C, 21)), w = be.tensor(random_vector(V * C, 22)),
             bias = be.tensor(random_vector(V, 23)), dout = be.tensor(random_vector(N * V, 24));
  Twin out = be.tensor(std::vector<float>(N * V));
  be.cpu->linear_forward(out.on_cpu, inp.on_cpu, w.on_cpu, bias.on_cpu, N, C, V);
  be.gpu->linear_forward(out.on_gpu, inp.on_gpu, w.on_gpu, bias.on_gpu, N, C, V);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  Twin dinp = be.tensor(random_vector(N * C, 25)), dw = be.tensor(random_vector(V * C, 26));
  be.cpu->linear_backward(dinp.on_cpu, dw.on_cpu, TensorView{}, dout.on_cpu, inp.on_cpu, w.on_cpu, N, C, V);
  be.gpu->linear_backward(dinp.on_gpu, dw.on_gpu, TensorView{}, dout.on_gpu, inp.on_gpu, w.on_gpu, N, C, V);
  CHECK(dinp.error() <= kDeviceFp32Tolerance);
  CHECK(dw.error() <= kDeviceFp32Tolerance);
  // accumulating into a staged output: its old values are copied in first
  Twin acc = be.tensor(random_vector(N * V, 27));
  be.cpu->matmul(false, true, N, V, C, inp.on_cpu, w.on_cpu, acc.on_cpu, true);
  be.gpu->matmul(false, true, N, V, C, inp.on_gpu, w.on_gpu, acc.on_gpu, true);
  CHECK(acc.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("bias add, residual add and their backward") {
  Backends be;
  const int N = 33, C = 70;
  const Twin bias = be.tensor(random_vector(C, 21)), a = be.tensor(random_vector(N * C, 22)),
             dout = be.tensor(random_vector(N * C, 23));
  Twin out = be.tensor(random_vector(N * C, 24)), db = be.tensor(random_vector(C, 25)),
       sum = be.tensor(std::vector<float>(N * C)), da = be.tensor(random_vector(N * C, 26));
  for (Backend* b : {be.cpu.get(), be.gpu.get()}) {
    const bool gpu = b == be.gpu.get();
    b->bias_add_forward(gpu ? out.on_gpu : out.on_cpu, gpu ? bias.on_gpu : bias.on_cpu, N, C);
    b->bias_add_backward(gpu ? db.on_gpu : db.on_cpu, gpu ? dout.on_gpu : dout.on_cpu, N, C);
    b->add_forward(gpu ? sum.on_gpu : sum.on_cpu, gpu ? a.on_gpu : a.on_cpu,
                   gpu ? out.on_gpu : out.on_cpu, static_cast<std::size_t>(N) * C);
    b->add_backward(gpu ? da.on_gpu : da.on_cpu, TensorView{}, gpu ? dout.on_gpu : dout.on_cpu,
                    static_cast<std::size_t>(N) * C);
  }
  CHECK(out.gpu_values() == out.cpu_values());
  CHECK(db.gpu_values() == db.cpu_values());
  CHECK(sum.gpu_values() == sum.cpu_values());
  CHECK(da.gpu_values() == da.cpu_values());
}

namespace {

/// Layernorm on N x C: C = 96 takes the kernels' 16-byte chunks, an odd C their scalar loads.
void check_layernorm(int C) {
  Backends be;
  const int N = 45;
  const Twin inp = be.tensor(random_vector(N * C, 31, 3.0f)), w = be.tensor(random_vector(C, 32)),
             bias = be.tensor(random_vector(C, 33)), dout = be.tensor(random_vector(N * C, 34));
  Twin out = be.tensor(std::vector<float>(N * C)), mean = be.tensor(std::vector<float>(N)),
       rstd = be.tensor(std::vector<float>(N));
  be.cpu->layernorm_forward(out.on_cpu, mean.on_cpu, rstd.on_cpu, inp.on_cpu, w.on_cpu, bias.on_cpu, N, C);
  be.gpu->layernorm_forward(out.on_gpu, mean.on_gpu, rstd.on_gpu, inp.on_gpu, w.on_gpu, bias.on_gpu, N, C);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  CHECK(mean.error() <= kDeviceFp32Tolerance);
  CHECK(rstd.error() <= kDeviceFp32Tolerance);
  Twin dinp = be.tensor(random_vector(N * C, 35)), dw = be.tensor(random_vector(C, 36)),
       db = be.tensor(random_vector(C, 37));
  be.cpu->layernorm_backward(dinp.on_cpu, dw.on_cpu, db.on_cpu, dout.on_cpu, inp.on_cpu, w.on_cpu,
                             mean.on_cpu, rstd.on_cpu, N, C);
  be.gpu->layernorm_backward(dinp.on_gpu, dw.on_gpu, db.on_gpu, dout.on_gpu, inp.on_gpu, w.on_gpu,
                             mean.on_gpu, rstd.on_gpu, N, C);
  CHECK(dinp.error() <= kDeviceFp32Tolerance);
  CHECK(dw.error() <= kDeviceFp32Tolerance);
  CHECK(db.error() <= kDeviceFp32Tolerance);
}

}  // namespace

TEST_CASE("layernorm forward and backward, 16-byte chunks and scalar loads") {
  check_layernorm(96);
  check_layernorm(93);
}

TEST_CASE("GELU forward and backward") {
  Backends be;
  const std::size_t n = 5000;
  const Twin inp = be.tensor(random_vector(n, 41, 4.0f)), dout = be.tensor(random_vector(n, 42));
  Twin out = be.tensor(std::vector<float>(n)), dinp = be.tensor(random_vector(n, 43));
  be.cpu->gelu_forward(out.on_cpu, inp.on_cpu, n);
  be.gpu->gelu_forward(out.on_gpu, inp.on_gpu, n);
  be.cpu->gelu_backward(dinp.on_cpu, inp.on_cpu, dout.on_cpu, n);
  be.gpu->gelu_backward(dinp.on_gpu, inp.on_gpu, dout.on_gpu, n);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  CHECK(dinp.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("flash attention forward and backward, head sizes 16, 64 and 128") {
  Backends be;
  for (int HS : {16, 64, 128}) {
    const int B = 2, NH = 2, T = 70, C = NH * HS;
    const Twin qkv = be.tensor(random_vector(static_cast<std::size_t>(B) * T * 3 * C, 51));
    const Twin dout = be.tensor(random_vector(static_cast<std::size_t>(B) * T * C, 52));
    Twin out = be.tensor(std::vector<float>(static_cast<std::size_t>(B) * T * C));
    Twin probs = be.attention_state(B, T, NH, HS);
    Twin dqkv = be.tensor(random_vector(qkv.count, 53));
    be.cpu->attention_forward(out.on_cpu, probs.on_cpu, qkv.on_cpu, B, T, NH, HS);
    be.gpu->attention_forward(out.on_gpu, probs.on_gpu, qkv.on_gpu, B, T, NH, HS);
    be.cpu->attention_backward(dqkv.on_cpu, dout.on_cpu, qkv.on_cpu, probs.on_cpu, B, T, NH, HS);
    be.gpu->attention_backward(dqkv.on_gpu, dout.on_gpu, qkv.on_gpu, probs.on_gpu, B, T, NH, HS);
    CHECK(out.error() <= kDeviceFp32Tolerance);
    CHECK(dqkv.error() <= kDeviceFp32Tolerance);
  }
}

TEST_CASE("dropout and the scalar flash attention's dropout draw the CPU backend's masks") {
  Backends be;
  const int rows = 37, channels = 70;
  Twin data = be.tensor(random_vector(static_cast<std::size_t>(rows) * channels, 54));
  const DropoutSite site{77, 0.3};
  be.cpu->dropout(data.on_cpu, site, 500, rows, channels);
  be.gpu->dropout(data.on_gpu, site, 500, rows, channels);
  CHECK(data.error() == 0.0);
  const int B = 2, NH = 2, T = 70, HS = 16, C = NH * HS;  // head size 16: the scalar kernels
  AttentionDropout dropout;
  dropout.site = {78, 0.2};
  dropout.first_sample = 9;
  dropout.first_head = 2;
  dropout.total_heads = 4;
  const Twin qkv = be.tensor(random_vector(static_cast<std::size_t>(B) * T * 3 * C, 55));
  const Twin dout = be.tensor(random_vector(static_cast<std::size_t>(B) * T * C, 56));
  Twin out = be.tensor(std::vector<float>(static_cast<std::size_t>(B) * T * C));
  Twin probs = be.attention_state(B, T, NH, HS);
  Twin dqkv = be.tensor(random_vector(qkv.count, 57));
  be.cpu->attention_forward(out.on_cpu, probs.on_cpu, qkv.on_cpu, B, T, NH, NH, HS, dropout);
  be.gpu->attention_forward(out.on_gpu, probs.on_gpu, qkv.on_gpu, B, T, NH, NH, HS, dropout);
  be.cpu->attention_backward(dqkv.on_cpu, dout.on_cpu, qkv.on_cpu, probs.on_cpu, B, T, NH, NH, HS, dropout);
  be.gpu->attention_backward(dqkv.on_gpu, dout.on_gpu, qkv.on_gpu, probs.on_gpu, B, T, NH, NH, HS, dropout);
  CHECK(out.error() <= kDeviceFp32Tolerance);
  CHECK(dqkv.error() <= kDeviceFp32Tolerance);
}

/// The embedding of `tokens` (B*T) over a table of `rows` rows, forward and backward on both
/// backends (the gradients start from random values: the backward adds): equal bit for bit.
void check_embedding_bit_for_bit(Backends& be, const std::vector<int32_t>& token_values, int B,
                                 int T, int C, int rows) {
  const Twin tokens = be.ints(token_values);
  const Twin wte = be.tensor(random_vector(rows * C, 61)), wpe = be.tensor(random_vector(T * C, 62)),
             dout = be.tensor(random_vector(B * T * C, 63));
  Twin out = be.tensor(std::vector<float>(B * T * C)), dwte = be.tensor(random_vector(rows * C, 64)),
       dwpe = be.tensor(random_vector(T * C, 65));
  be.cpu->embedding_forward(out.on_cpu, tokens.on_cpu, wte.on_cpu, wpe.on_cpu, B, T, C);
  be.gpu->embedding_forward(out.on_gpu, tokens.on_gpu, wte.on_gpu, wpe.on_gpu, B, T, C);
  be.cpu->embedding_backward(dwte.on_cpu, dwpe.on_cpu, dout.on_cpu, tokens.on_cpu, B, T, C);
  be.gpu->embedding_backward(dwte.on_gpu, dwpe.on_gpu, dout.on_gpu, tokens.on_gpu, B, T, C);
  CHECK(out.gpu_values() == out.cpu_values());
  CHECK(dwte.gpu_values() == dwte.cpu_values());
  CHECK(dwpe.gpu_values() == dwpe.cpu_values());
}

TEST_CASE("embedding forward and backward, bit for bit") {
  Backends be;
  check_embedding_bit_for_bit(be, {1, 4, 4, 0, 10, 4, 1, 1, 2, 3, 4, 5, 6, 7, 4}, 3, 5, 33, 11);
}

TEST_CASE("embedding without a position table (Llama): the token rows only, bit for bit") {
  Backends be;
  const int B = 2, T = 3, C = 33, V = 6;
  const Twin tokens = be.ints({5, -1, 2, 2, 0, 5});  // -1: another slice's row, zero
  const Twin wte = be.tensor(random_vector(V * C, 66)), dout = be.tensor(random_vector(B * T * C, 67));
  Twin out = be.tensor(random_vector(B * T * C, 68)), dwte = be.tensor(random_vector(V * C, 69));
  be.cpu->embedding_forward(out.on_cpu, tokens.on_cpu, wte.on_cpu, ConstTensorView{}, B, T, C);
  be.gpu->embedding_forward(out.on_gpu, tokens.on_gpu, wte.on_gpu, ConstTensorView{}, B, T, C);
  be.cpu->embedding_backward(dwte.on_cpu, TensorView{}, dout.on_cpu, tokens.on_cpu, B, T, C);
  be.gpu->embedding_backward(dwte.on_gpu, TensorView{}, dout.on_gpu, tokens.on_gpu, B, T, C);
  CHECK(out.gpu_values() == out.cpu_values());
  CHECK(dwte.gpu_values() == dwte.cpu_values());
}

TEST_CASE("fused softmax + cross-entropy: summed loss and gradient") {
  Backends be;
  const int N = 7, V = 1001;
  const Twin logits = be.tensor(random_vector(static_cast<std::size_t>(N) * V, 71, 5.0f));
  const Twin targets = be.ints({0, 1000, 17, 500, 3, 999, 256});
  Twin dlogits = be.tensor(random_vector(logits.count, 72));
  const double cpu_loss = be.cpu->cross_entropy_forward(logits.on_cpu, targets.on_cpu, N, V);
  const double gpu_loss = be.gpu->cross_entropy_forward(logits.on_gpu, targets.on_gpu, N, V);
  CHECK(gpu_loss == doctest::Approx(cpu_loss).epsilon(kDeviceFp32Tolerance));
  be.cpu->cross_entropy_backward(dlogits.on_cpu, logits.on_cpu, targets.on_cpu, N, V, 0.25);
  be.gpu->cross_entropy_backward(dlogits.on_gpu, logits.on_gpu, targets.on_gpu, N, V, 0.25);
  CHECK(dlogits.error() <= kDeviceFp32Tolerance);
  const Twin bad = be.ints({0, 0, 0, 0, 0, 0, V});
  CHECK_THROWS_AS(be.gpu->cross_entropy_forward(logits.on_gpu, bad.on_gpu, N, V), std::out_of_range);
}

TEST_CASE("cross-entropy gradient in place over the logits: the out-of-place gradient, bit for bit") {
  Backends be;
  const int N = 5, V = 50257;  // the GPT-2 vocabulary: rows longer than a block's stride
  const std::vector<float> values = random_vector(static_cast<std::size_t>(N) * V, 75, 5.0f);
  const Twin logits = be.tensor(values), targets = be.ints({0, 50256, 17, 25000, 3});
  Twin separate = be.tensor(std::vector<float>(values.size(), 0.0f)), in_place = be.tensor(values);
  be.gpu->cross_entropy_backward(separate.on_gpu, logits.on_gpu, targets.on_gpu, N, V, 0.5);
  be.gpu->cross_entropy_backward_in_place(in_place.on_gpu, targets.on_gpu, N, V, 0.5);
  be.cpu->cross_entropy_backward_in_place(in_place.on_cpu, targets.on_cpu, N, V, 0.5);
  CHECK(in_place.values(*be.gpu, in_place.on_gpu) == separate.values(*be.gpu, separate.on_gpu));
  CHECK(in_place.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("vocabulary-slice cross-entropy: statistics and gradient; embedding of a slice") {
  Backends be;
  const int N = 5, V = 25129;  // half of GPT-2's vocabulary, rounded up
  const Twin logits = be.tensor(random_vector(static_cast<std::size_t>(N) * V, 76, 5.0f));
  const Twin targets = be.ints({0, -1, 17, 25128, -1});  // -1: another slice's target
  Twin statistics = be.tensor(std::vector<float>(static_cast<std::size_t>(N) * 4, 0.0f));
  be.cpu->cross_entropy_shard_statistics(logits.on_cpu, targets.on_cpu, N, V, statistics.on_cpu);
  be.gpu->cross_entropy_shard_statistics(logits.on_gpu, targets.on_gpu, N, V, statistics.on_gpu);
  const std::vector<float> cpu_s = statistics.cpu_values(), gpu_s = statistics.gpu_values();
  for (int r = 0; r < N; ++r) {
    CHECK(gpu_s[4 * r] == cpu_s[4 * r]);
    CHECK(gpu_s[4 * r + 1] + gpu_s[4 * r + 2] ==
          doctest::Approx(static_cast<double>(cpu_s[4 * r + 1]) + cpu_s[4 * r + 2]).epsilon(kDeviceFp32Tolerance));
    CHECK(gpu_s[4 * r + 3] == cpu_s[4 * r + 3]);
  }
  const Twin log_sum_exp = be.tensor({11.5f, 1e-7f, 12.0f, 0.0f, 11.0f, -3e-7f, 11.25f, 0.0f, 12.5f, 0.0f});
  Twin gradient = be.tensor(logits.cpu_values());
  be.cpu->cross_entropy_shard_backward_in_place(gradient.on_cpu, targets.on_cpu, log_sum_exp.on_cpu, N, V, 0.5);
  be.gpu->cross_entropy_shard_backward_in_place(gradient.on_gpu, targets.on_gpu, log_sum_exp.on_gpu, N, V, 0.5);
  CHECK(gradient.error() <= kDeviceFp32Tolerance);
  check_embedding_bit_for_bit(be, {3, -1, 0, -1, -1, 3}, 2, 3, 8, 4);  // a slice of 4 token rows
}

TEST_CASE("AdamW update over several chunks") {
  Backends be;
  const std::size_t n = 10000;
  std::vector<float> v0 = random_vector(n, 84, 0.1f);
  for (float& x : v0) x *= x;
  Twin p = be.tensor(random_vector(n, 81)), m = be.tensor(random_vector(n, 83, 0.1f)), v = be.tensor(v0);
  const Twin g = be.tensor(random_vector(n, 82));
  for (int step = 1; step <= 3; ++step) {
    be.cpu->adamw_update(p.on_cpu, g.on_cpu, m.on_cpu, v.on_cpu, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, step);
    be.gpu->adamw_update(p.on_gpu, g.on_gpu, m.on_gpu, v.on_gpu, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, step);
  }
  CHECK(p.error() <= kDeviceFp32Tolerance);
  CHECK(m.error() <= kDeviceFp32Tolerance);
  CHECK(v.error() <= kDeviceFp32Tolerance);
}

TEST_CASE("SGD batch: one launch over several tensors, equal to the CPU backend's update") {
  Backends be;
  const std::size_t n = 9001;  // cut into segments of 4096, 1 and 4904 elements, the last undecayed
  Twin p = be.tensor(random_vector(n, 95)), b = be.tensor(random_vector(n, 97, 0.1f));
  const Twin g = be.tensor(random_vector(n, 96));
  auto segments = [](TensorView pv, ConstTensorView gv, TensorView bv) {
    std::vector<Backend::SgdSegment> out;
    for (const auto& [at, len] : {std::pair<std::size_t, std::size_t>{0, 4096}, {4096, 1}, {4097, 4904}})
      out.push_back({pv.slice(at, len), gv.slice(at, len), bv.slice(at, len), at < 4097});
    return out;
  };
  for (int step = 1; step <= 3; ++step) {
    be.cpu->sgd_update_batch(segments(p.on_cpu, g.on_cpu, b.on_cpu), 1e-2, 0.9, 0.1);
    be.gpu->sgd_update_batch(segments(p.on_gpu, g.on_gpu, b.on_gpu), 1e-2, 0.9, 0.1);
  }
  CHECK(p.error() <= kDeviceFp32Tolerance);
  CHECK(b.error() <= kDeviceFp32Tolerance);
  Tensor short_b(*be.gpu, 3, DType::fp32);
  CHECK_THROWS_AS(be.gpu->sgd_update_batch({{p.on_gpu.slice(0, 4), g.on_gpu.slice(0, 4), short_b.view()}}, 1e-2,
                                           0.9, 0.1),
                  std::invalid_argument);
}

TEST_CASE("sum of squares over several tensors equals the CPU backend's, and repeats bit for bit") {
  Backends be;
  const Twin a = be.tensor(random_vector(5000, 98)), b = be.tensor(random_vector(3, 99));
  const double cpu = be.cpu->sum_of_squares({a.on_cpu, b.on_cpu});
  const double gpu = be.gpu->sum_of_squares({a.on_gpu, b.on_gpu});
  CHECK(gpu == doctest::Approx(cpu).epsilon(1e-12));
  CHECK(be.gpu->sum_of_squares({a.on_gpu, b.on_gpu}) == gpu);  // cached tables, the same order
  CHECK(be.gpu->sum_of_squares({}) == 0.0);
}

TEST_CASE("AdamW batch: one launch over several tensors, tables kept until the segments change") {
  Backends be;
  const std::size_t n = 13001;  // cut into segments of 1, 4096, 5000 and 3904 elements
  std::vector<float> v0 = random_vector(n, 94, 0.1f);
  for (float& x : v0) x *= x;
  Twin p = be.tensor(random_vector(n, 91)), m = be.tensor(random_vector(n, 93, 0.1f)), v = be.tensor(v0);
  const Twin g = be.tensor(random_vector(n, 92));
  auto segments = [](const std::vector<std::size_t>& cuts, TensorView pv, ConstTensorView gv,
                     TensorView mv, TensorView vv) {
    std::vector<Backend::AdamwSegment> out;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const std::size_t at = cuts[i], len = cuts[i + 1] - cuts[i];
      out.push_back({pv.slice(at, len), gv.slice(at, len), mv.slice(at, len), vv.slice(at, len)});
    }
    return out;
  };
  const std::vector<std::size_t> all = {0, 1, 4097, 9097, n}, part = {0, 4097, 9097};
  for (int step = 1; step <= 4; ++step) {  // steps 1-2 build and reuse, 3 rebuilds, 4 returns
    const auto& cuts = step == 3 ? part : all;
    be.cpu->adamw_update_batch(segments(cuts, p.on_cpu, g.on_cpu, m.on_cpu, v.on_cpu), 1e-3, 0.9,
                               0.95, 1e-8, 0.1, step);
    be.gpu->adamw_update_batch(segments(cuts, p.on_gpu, g.on_gpu, m.on_gpu, v.on_gpu), 1e-3, 0.9,
                               0.95, 1e-8, 0.1, step);
  }
  CHECK(p.error() <= kDeviceFp32Tolerance);
  CHECK(m.error() <= kDeviceFp32Tolerance);
  CHECK(v.error() <= kDeviceFp32Tolerance);
  Tensor short_m(*be.gpu, 3, DType::fp32);
  CHECK_THROWS_AS(be.gpu->adamw_update_batch({{p.on_gpu.slice(0, 4), g.on_gpu.slice(0, 4),
                                               short_m.view(), v.on_gpu.slice(0, 4)}},
                                             1e-3, 0.9, 0.95, 1e-8, 0.1, 5),
                  std::invalid_argument);
}

TEST_CASE("the arena's peak covers the workspace and every live allocation") {
  Backends be;
  const std::size_t before = cuda_backend_peak_bytes(*be.gpu);
  CHECK(before >= (std::size_t{32} << 20));  // cuBLASLt's workspace
  void* block = be.gpu->allocate(std::size_t{4} << 20);
  CHECK(cuda_backend_peak_bytes(*be.gpu) == before + (std::size_t{4} << 20));
  be.gpu->release(block);
  CHECK(cuda_backend_peak_bytes(*be.gpu) == before + (std::size_t{4} << 20));
  CHECK(cuda_backend_peak_bytes(*be.cpu) == 0u);
}

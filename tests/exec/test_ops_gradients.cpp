// File: test_ops_gradients.cpp
// Every CPU backend op (the GPT's and the Llama's): backward against central finite differences
// at tiny sizes (relative error of the whole gradient <= 1e-3; <= 2e-4 for the Llama ops), and
// exact forward values on hand-checkable cases.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "finite_differences.h"
#include "host_views.h"

using namespace whale::exec;
using whale::exec::test::dot;
using whale::exec::test::gradient_error;
using whale::exec::test::host_view;
using whale::exec::test::random_vector;
using whale::exec::test::make_cpu_backend;

namespace {

/// The finite-difference bound of the Llama ops: their measured errors are below 1e-4.
constexpr double kTightTolerance = 2e-4;

}  // namespace

TEST_CASE("matmul: all four transpose combinations on a 2x2 case") {
  auto be = make_cpu_backend();
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c(4);
  be->matmul(false, false, 2, 2, 2, host_view(a), host_view(b), host_view(c), false);
  CHECK(c == std::vector<float>{19, 22, 43, 50});
  be->matmul(true, false, 2, 2, 2, host_view(a), host_view(b), host_view(c), false);
  CHECK(c == std::vector<float>{26, 30, 38, 44});
  be->matmul(false, true, 2, 2, 2, host_view(a), host_view(b), host_view(c), false);
  CHECK(c == std::vector<float>{17, 23, 39, 53});
  be->matmul(true, true, 2, 2, 2, host_view(a), host_view(b), host_view(c), true);  // accumulates
  CHECK(c == std::vector<float>{17 + 23, 23 + 31, 39 + 34, 53 + 46});
}

TEST_CASE("linear: forward value and gradients of input, weight and bias") {
  auto be = make_cpu_backend();
  const int N = 3, C = 4, OC = 5;
  auto inp = random_vector(N * C, 1), w = random_vector(OC * C, 2), bias = random_vector(OC, 3);
  const auto r = random_vector(N * OC, 4);
  std::vector<float> out(N * OC);
  be->linear_forward(host_view(out), host_view(inp), host_view(w), host_view(bias), N, C, OC);
  double expected = bias[2];
  for (int c = 0; c < C; ++c) expected += static_cast<double>(inp[C + c]) * w[2 * C + c];
  CHECK(out[OC + 2] == doctest::Approx(expected).epsilon(1e-6));
  auto loss = [&] {
    be->linear_forward(host_view(out), host_view(inp), host_view(w), host_view(bias), N, C, OC);
    return dot(out, r);
  };
  std::vector<float> dinp(N * C), dw(OC * C), dbias(OC);
  be->linear_backward(host_view(dinp), host_view(dw), host_view(dbias), host_view(r), host_view(inp), host_view(w), N,
                      C, OC);
  CHECK(gradient_error(inp, loss, dinp) <= 1e-3);
  CHECK(gradient_error(w, loss, dw) <= 1e-3);
  CHECK(gradient_error(bias, loss, dbias) <= 1e-3);
}

TEST_CASE("bias_add and add: values and accumulated gradients") {
  auto be = make_cpu_backend();
  std::vector<float> out = {1, 2, 3, 4, 5, 6};
  const std::vector<float> bias = {10, 20, 30};
  be->bias_add_forward(host_view(out), host_view(bias), 2, 3);
  CHECK(out == std::vector<float>{11, 22, 33, 14, 25, 36});
  std::vector<float> dbias = {1, 1, 1};
  be->bias_add_backward(host_view(dbias), host_view(out), 2, 3);
  CHECK(dbias == std::vector<float>{26, 48, 70});
  std::vector<float> sum(3), da = {1, 1, 1}, db(3);
  const std::vector<float> a = {1, 2, 3}, b = {0.5f, 0.25f, -1};
  be->add_forward(host_view(sum), host_view(a), host_view(b), 3);
  CHECK(sum == std::vector<float>{1.5f, 2.25f, 2});
  be->add_backward(host_view(da), host_view(db), host_view(b), 3);
  CHECK(da == std::vector<float>{1.5f, 1.25f, 0});
  CHECK(db == b);
}

TEST_CASE("layernorm of [1, 2, 3] is [-1.2247, 0, 1.2247]; gradients match") {
  auto be = make_cpu_backend();
  std::vector<float> x = {1, 2, 3}, w = {1, 1, 1}, b = {0, 0, 0}, out(3), mean(1), rstd(1);
  be->layernorm_forward(host_view(out), host_view(mean), host_view(rstd), host_view(x), host_view(w), host_view(b), 1, 3);
  const double s = 1.0 / std::sqrt(2.0 / 3.0 + 1e-5);
  CHECK(mean[0] == 2.0f);
  CHECK(rstd[0] == doctest::Approx(s).epsilon(1e-7));
  CHECK(out[0] == doctest::Approx(-s).epsilon(1e-6));
  CHECK(out[1] == 0.0f);
  CHECK(out[2] == doctest::Approx(s).epsilon(1e-6));

  const int N = 3, C = 6;
  auto inp = random_vector(N * C, 5), weight = random_vector(C, 6), bias = random_vector(C, 7);
  const auto r = random_vector(N * C, 8);
  std::vector<float> y(N * C), mu(N), rs(N);
  auto loss = [&] {
    be->layernorm_forward(host_view(y), host_view(mu), host_view(rs), host_view(inp), host_view(weight),
                          host_view(bias), N, C);
    return dot(y, r);
  };
  loss();
  std::vector<float> dinp(N * C), dw(C), db(C);
  be->layernorm_backward(host_view(dinp), host_view(dw), host_view(db), host_view(r), host_view(inp), host_view(weight),
                         host_view(mu), host_view(rs), N, C);
  CHECK(gradient_error(inp, loss, dinp, 1e-3f) <= 1e-3);
  CHECK(gradient_error(weight, loss, dw) <= 1e-3);
  CHECK(gradient_error(bias, loss, db) <= 1e-3);
}

TEST_CASE("GELU(0) = 0, GELU(x) ~ x for large x; gradient matches") {
  auto be = make_cpu_backend();
  std::vector<float> x = {0.0f, 10.0f, -10.0f, 1.0f}, y(4);
  be->gelu_forward(host_view(y), host_view(x), 4);
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == 10.0f);
  CHECK(y[2] == doctest::Approx(0.0).epsilon(1e-6));
  // 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.841192
  CHECK(y[3] == doctest::Approx(0.841192).epsilon(1e-5));
  auto inp = random_vector(12, 9, 3.0f);
  const auto r = random_vector(12, 10);
  std::vector<float> out(12), dinp(12);
  auto loss = [&] {
    be->gelu_forward(host_view(out), host_view(inp), 12);
    return dot(out, r);
  };
  be->gelu_backward(host_view(dinp), host_view(inp), host_view(r), 12);
  CHECK(gradient_error(inp, loss, dinp, 1e-3f) <= 1e-3);
}

TEST_CASE("attention: causal softmax rows sum to 1, zeros above the diagonal; dqkv matches") {
  auto be = make_cpu_backend();
  const int B = 2, T = 4, NH = 2, HS = 3, C = NH * HS;
  auto qkv = random_vector(B * T * 3 * C, 11);
  const auto r = random_vector(B * T * C, 12);
  std::vector<float> out(B * T * C), probs(B * NH * T * T);
  auto loss = [&] {
    be->attention_forward(host_view(out), host_view(probs), host_view(qkv), B, T, NH, HS);
    return dot(out, r);
  };
  loss();
  for (int row = 0; row < B * NH * T; ++row) {
    const int i = row % T;
    double sum = 0.0;
    for (int j = 0; j < T; ++j) {
      sum += probs[row * T + j];
      if (j > i) CHECK(probs[row * T + j] == 0.0f);
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
  // The first token attends only to itself: its output is its own V.
  for (int h = 0; h < NH; ++h)
    for (int d = 0; d < HS; ++d) CHECK(out[h * HS + d] == qkv[2 * C + h * HS + d]);
  std::vector<float> dqkv(qkv.size());
  be->attention_backward(host_view(dqkv), host_view(r), host_view(qkv), host_view(probs), B, T, NH, HS);
  CHECK(gradient_error(qkv, loss, dqkv, 1e-3f) <= 1e-3);
}

TEST_CASE("embedding: token plus position rows; gradients accumulate per token") {
  auto be = make_cpu_backend();
  const int B = 2, T = 3, C = 2, V = 4;
  const std::vector<int32_t> tokens = {1, 3, 1, 0, 2, 1};
  auto wte = random_vector(V * C, 13), wpe = random_vector(T * C, 14);
  const auto r = random_vector(B * T * C, 15);
  std::vector<float> out(B * T * C);
  be->embedding_forward(host_view(out), host_view(tokens), host_view(wte), host_view(wpe), B, T, C);
  CHECK(out[4 * C + 1] == wte[2 * C + 1] + wpe[1 * C + 1]);
  auto loss = [&] {
    be->embedding_forward(host_view(out), host_view(tokens), host_view(wte), host_view(wpe), B, T, C);
    return dot(out, r);
  };
  std::vector<float> dwte(V * C), dwpe(T * C);
  be->embedding_backward(host_view(dwte), host_view(dwpe), host_view(r), host_view(tokens), B, T, C);
  CHECK(gradient_error(wte, loss, dwte) <= 1e-3);
  CHECK(gradient_error(wpe, loss, dwpe) <= 1e-3);
}

TEST_CASE("cross-entropy of a uniform distribution is ln V; gradient matches") {
  auto be = make_cpu_backend();
  const int N = 3, V = 5;
  std::vector<float> uniform(N * V, 0.7f);
  const std::vector<int32_t> targets = {0, 4, 2};
  CHECK(be->cross_entropy_forward(host_view(uniform), host_view(targets), N, V) ==
        doctest::Approx(3.0 * std::log(5.0)).epsilon(1e-12));
  auto logits = random_vector(N * V, 16, 2.0f);
  auto loss = [&] { return 0.5 * be->cross_entropy_forward(host_view(logits), host_view(targets), N, V); };
  std::vector<float> dlogits(N * V);
  be->cross_entropy_backward(host_view(dlogits), host_view(logits), host_view(targets), N, V, 0.5);
  CHECK(gradient_error(logits, loss, dlogits, 1e-3f) <= 1e-3);
  const std::vector<int32_t> bad = {0, 5, 1};
  CHECK_THROWS_WITH(be->cross_entropy_forward(host_view(logits), host_view(bad), N, V),
                    doctest::Contains("target 5 outside vocabulary 0..4"));
}

TEST_CASE("cross-entropy gradient in place over the logits equals the gradient into zeros") {
  auto be = make_cpu_backend();
  const int N = 3, V = 7;
  const std::vector<int32_t> targets = {6, 0, 3};
  const auto logits = random_vector(N * V, 17, 3.0f);
  std::vector<float> separate(N * V, 0.0f), in_place = logits;
  be->cross_entropy_backward(host_view(separate), host_view(logits), host_view(targets), N, V, 0.25);
  be->cross_entropy_backward_in_place(host_view(in_place), host_view(targets), N, V, 0.25);
  CHECK(in_place == separate);
  // Each row of the gradient sums to zero: softmax sums to 1, the one-hot to 1.
  for (int r = 0; r < N; ++r) {
    double row = 0.0;
    for (int v = 0; v < V; ++v) row += in_place[static_cast<std::size_t>(r) * V + v];
    CHECK(std::abs(row) <= 1e-6);
  }
}

TEST_CASE("adamw: one hand-checked step with and without weight decay") {
  auto be = make_cpu_backend();
  // m = 0.05, v = 0.00025; corrected 0.5 and 0.25; update = 0.5 / 0.5 = 1 (+ wd * p).
  std::vector<float> p = {1.0f, 1.0f}, g = {0.5f, 0.5f}, m(2), v(2);
  be->adamw_update(host_view(p), host_view(g), host_view(m), host_view(v), 1, 0.1, 0.9, 0.999, 0.0, 0.0, 1);
  CHECK(p[0] == doctest::Approx(0.9).epsilon(1e-7));
  CHECK(m[0] == doctest::Approx(0.05).epsilon(1e-7));
  CHECK(v[0] == doctest::Approx(0.00025).epsilon(1e-6));
  CHECK(p[1] == 1.0f);  // outside the count: untouched
  std::vector<float> q = {1.0f}, mq(1), vq(1);
  be->adamw_update(host_view(q), host_view(g), host_view(mq), host_view(vq), 1, 0.1, 0.9, 0.999, 0.0, 0.1, 1);
  CHECK(q[0] == doctest::Approx(0.89).epsilon(1e-7));
}

TEST_CASE("RMSNorm of [3, 4] is [3, 4] / sqrt(12.5); gradients of input and weight match") {
  auto be = make_cpu_backend();
  std::vector<float> x = {3, 4}, w = {1, 2}, out(2), rstd(1);
  be->rmsnorm_forward(host_view(out), host_view(rstd), host_view(x), host_view(w), 1, 2);
  const double s = 1.0 / std::sqrt(12.5 + 1e-5);
  CHECK(rstd[0] == doctest::Approx(s).epsilon(1e-7));
  CHECK(out[0] == doctest::Approx(3 * s).epsilon(1e-6));
  CHECK(out[1] == doctest::Approx(8 * s).epsilon(1e-6));

  const int N = 3, C = 6;
  auto inp = random_vector(N * C, 21), weight = random_vector(C, 22);
  const auto r = random_vector(N * C, 23);
  std::vector<float> y(N * C), rs(N);
  auto loss = [&] {
    be->rmsnorm_forward(host_view(y), host_view(rs), host_view(inp), host_view(weight), N, C);
    return dot(y, r);
  };
  loss();
  std::vector<float> dinp(N * C), dw(C);
  be->rmsnorm_backward(host_view(dinp), host_view(dw), host_view(r), host_view(inp),
                       host_view(weight), host_view(rs), N, C);
  CHECK(gradient_error(inp, loss, dinp, 1e-3f) <= kTightTolerance);
  CHECK(gradient_error(weight, loss, dw, 1e-3f) <= kTightTolerance);
}

TEST_CASE("SwiGLU: silu(0) * up = 0, silu(1) * 2 = 2 sigmoid(1); gradients of gate and up match") {
  auto be = make_cpu_backend();
  std::vector<float> gate = {0.0f, 1.0f}, up = {5.0f, 2.0f}, out(2);
  be->swiglu_forward(host_view(out), host_view(gate), host_view(up), 2);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == doctest::Approx(2.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  auto g = random_vector(12, 24, 3.0f), u = random_vector(12, 25);
  const auto r = random_vector(12, 26);
  std::vector<float> y(12), dg(12), du(12);
  auto loss = [&] {
    be->swiglu_forward(host_view(y), host_view(g), host_view(u), 12);
    return dot(y, r);
  };
  be->swiglu_backward(host_view(dg), host_view(du), host_view(g), host_view(u), host_view(r), 12);
  CHECK(gradient_error(g, loss, dg, 1e-3f) <= kTightTolerance);
  CHECK(gradient_error(u, loss, du, 1e-3f) <= kTightTolerance);
}

TEST_CASE("RoPE: position 0 stays, position 1 turns pair 0 by 1 radian; gradient matches") {
  auto be = make_cpu_backend();
  // One sample, T = 2, rows of 6 columns: one rotated head of 4, then 2 columns that stay.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6};
  be->rope_forward(host_view(x), 1, 2, 6, 1, 4, 10000.0);
  CHECK(std::vector<float>(x.begin(), x.begin() + 6) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // Pair 0 = (x[0], x[2]) turns by 1 * 10000^0 = 1; pair 1 = (x[1], x[3]) by 10000^(-1/2).
  const double c = std::cos(1.0), s = std::sin(1.0);
  const double c1 = std::cos(0.01), s1 = std::sin(0.01);
  CHECK(x[6] == doctest::Approx(1 * c - 3 * s).epsilon(1e-6));
  CHECK(x[8] == doctest::Approx(3 * c + 1 * s).epsilon(1e-6));
  CHECK(x[7] == doctest::Approx(2 * c1 - 4 * s1).epsilon(1e-6));
  CHECK(x[9] == doctest::Approx(4 * c1 + 2 * s1).epsilon(1e-6));
  CHECK(x[10] == 5.0f);
  CHECK(x[11] == 6.0f);
  be->rope_backward(host_view(x), 1, 2, 6, 1, 4, 10000.0);  // the inverse rotation
  CHECK(x[6] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(x[8] == doctest::Approx(3.0).epsilon(1e-6));

  const int B = 2, T = 5, W = 3 * 4, heads = 2, HS = 4;  // two of three heads rotate
  auto inp = random_vector(B * T * W, 27);
  const auto r = random_vector(B * T * W, 28);
  std::vector<float> y(inp.size());
  auto loss = [&] {
    y = inp;
    be->rope_forward(host_view(y), B, T, W, heads, HS, 500.0);
    return dot(y, r);
  };
  std::vector<float> dinp = r;
  be->rope_backward(host_view(dinp), B, T, W, heads, HS, 500.0);
  CHECK(gradient_error(inp, loss, dinp, 1e-3f) <= kTightTolerance);
}

TEST_CASE("grouped-query attention equals multi-head attention on repeated key/value heads") {
  auto be = make_cpu_backend();
  const int B = 2, T = 4, NH = 4, KV = 2, HS = 3, C = NH * HS, KC = KV * HS;
  auto qkv = random_vector(B * T * (C + 2 * KC), 31);
  const auto r = random_vector(B * T * C, 32);
  std::vector<float> out(B * T * C), probs(B * NH * T * T);
  auto loss = [&] {
    be->attention_forward(host_view(out), host_view(probs), host_view(qkv), B, T, NH, KV, HS);
    return dot(out, r);
  };
  loss();
  // The same attention with each key/value head repeated for its two query heads.
  std::vector<float> mha(B * T * 3 * C), mha_out(out.size()), mha_probs(probs.size());
  for (int n = 0; n < B * T; ++n)
    for (int h = 0; h < NH; ++h)
      for (int d = 0; d < HS; ++d) {
        const float* row = qkv.data() + n * (C + 2 * KC);
        float* to = mha.data() + n * 3 * C;
        to[h * HS + d] = row[h * HS + d];
        to[C + h * HS + d] = row[C + (h / 2) * HS + d];
        to[2 * C + h * HS + d] = row[C + KC + (h / 2) * HS + d];
      }
  be->attention_forward(host_view(mha_out), host_view(mha_probs), host_view(mha), B, T, NH, HS);
  CHECK(out == mha_out);
  std::vector<float> dqkv(qkv.size()), dmha(mha.size());
  be->attention_backward(host_view(dqkv), host_view(r), host_view(qkv), host_view(probs), B, T,
                         NH, KV, HS);
  be->attention_backward(host_view(dmha), host_view(r), host_view(mha), host_view(mha_probs), B,
                         T, NH, HS);
  // A key/value head's gradient is the sum of its repeated copies' gradients.
  const float* d0 = dmha.data() + 5 * 3 * C;  // token 5
  const float* g0 = dqkv.data() + 5 * (C + 2 * KC);
  CHECK(g0[C + HS + 1] == doctest::Approx(d0[C + 2 * HS + 1] + d0[C + 3 * HS + 1]).epsilon(1e-6));
  CHECK(g0[C + KC] == doctest::Approx(d0[2 * C] + d0[2 * C + HS]).epsilon(1e-6));
  CHECK(gradient_error(qkv, loss, dqkv, 1e-3f) <= kTightTolerance);
}

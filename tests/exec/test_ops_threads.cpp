// File: test_ops_threads.cpp
// The CPU backend's results do not depend on its thread count: every op, forward and backward,
// and one whole training step of a tiny GPT stage give the same bits at 1, 2 and 3 threads;
// the panel-split GEMM gives the bits of one Eigen GEMM over all rows.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "host_views.h"
#include "whale/exec/model/stage_module.h"

using namespace whale;
using namespace whale::exec;

namespace {

// Sizes that split every parallel loop over 3 threads: 200 GEMM rows (96-row panels: 96, 96,
// 8), 130 channels (64-column blocks of the bias and layernorm sums), 3000 GELU and AdamW
// elements (1024- and 256-element chunks), 2 x 3 (sample, head) attention pairs.
constexpr int kRows = 200, kChannels = 130, kOutChannels = 70, kVocabulary = 50;
constexpr int kBatch = 2, kSequence = 20, kHeads = 3, kHeadSize = 8;
constexpr std::size_t kElements = 3000;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<int32_t> random_ids(std::size_t n, int bound, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = static_cast<int32_t>(rng() % static_cast<unsigned>(bound));
  return v;
}

/// Named float outputs, plus the op's or step's summed loss (a double).
struct Outputs {
  std::map<std::string, std::vector<float>> tensors;
  double loss = 0.0;
  std::vector<float>& operator[](const std::string& name) { return tensors[name]; }
};

/// Every compute op of a CPU backend with `threads` threads on fixed random inputs; gradient
/// outputs start non-zero, since the backward ops accumulate.
Outputs run_every_op(int threads) {
  auto backend = test::make_cpu_backend(threads);
  Backend& be = *backend;
  using test::host_view;
  Outputs o;
  const auto x = random_floats(kRows * kChannels, 1);
  const auto w = random_floats(kOutChannels * kChannels, 2);
  const auto bias = random_floats(kOutChannels, 3);
  const auto dy = random_floats(kRows * kOutChannels, 4);

  for (int t = 0; t < 4; ++t) {  // matmul, all four transpositions: C (kRows, kOutChannels)
    const bool ta = t & 1, tb = t & 2;
    auto& c = o["matmul" + std::to_string(t)] = random_floats(kRows * kOutChannels, 5);
    be.matmul(ta, tb, kRows, kOutChannels, kChannels, host_view(x), host_view(w), host_view(c),
              true);
  }
  auto& y = o["linear.out"] = std::vector<float>(kRows * kOutChannels);
  be.linear_forward(host_view(y), host_view(x), host_view(w), host_view(bias), kRows, kChannels,
                    kOutChannels);
  auto& dx = o["linear.dinp"] = random_floats(kRows * kChannels, 6);
  auto& dw = o["linear.dweight"] = random_floats(kOutChannels * kChannels, 7);
  auto& db = o["linear.dbias"] = random_floats(kOutChannels, 8);
  be.linear_backward(host_view(dx), host_view(dw), host_view(db), host_view(dy), host_view(x),
                     host_view(w), kRows, kChannels, kOutChannels);
  auto& biased = o["bias_add.out"] = y;
  be.bias_add_forward(host_view(biased), host_view(bias), kRows, kOutChannels);
  auto& dbias = o["bias_add.dbias"] = random_floats(kOutChannels, 9);
  be.bias_add_backward(host_view(dbias), host_view(dy), kRows, kOutChannels);
  auto& sum = o["add.out"] = std::vector<float>(kRows * kChannels);
  be.add_forward(host_view(sum), host_view(x), host_view(dx), sum.size());
  auto& da = o["add.da"] = random_floats(x.size(), 10);
  auto& dsum = o["add.db"] = random_floats(x.size(), 11);
  be.add_backward(host_view(da), host_view(dsum), host_view(x), x.size());

  const auto gamma = random_floats(kChannels, 12), beta = random_floats(kChannels, 13);
  auto& ln = o["layernorm.out"] = std::vector<float>(x.size());
  auto& mean = o["layernorm.mean"] = std::vector<float>(kRows);
  auto& rstd = o["layernorm.rstd"] = std::vector<float>(kRows);
  be.layernorm_forward(host_view(ln), host_view(mean), host_view(rstd), host_view(x),
                       host_view(gamma), host_view(beta), kRows, kChannels);
  auto& ln_dx = o["layernorm.dinp"] = random_floats(x.size(), 14);
  auto& ln_dw = o["layernorm.dweight"] = random_floats(kChannels, 15);
  auto& ln_db = o["layernorm.dbias"] = random_floats(kChannels, 16);
  be.layernorm_backward(host_view(ln_dx), host_view(ln_dw), host_view(ln_db), host_view(dx),
                        host_view(x), host_view(gamma), host_view(mean), host_view(rstd), kRows,
                        kChannels);

  const auto g_in = random_floats(kElements, 17), g_dout = random_floats(kElements, 18);
  auto& gelu = o["gelu.out"] = std::vector<float>(kElements);
  be.gelu_forward(host_view(gelu), host_view(g_in), kElements);
  auto& gelu_dx = o["gelu.dinp"] = random_floats(kElements, 19);
  be.gelu_backward(host_view(gelu_dx), host_view(g_in), host_view(g_dout), kElements);

  const int attn_rows = kBatch * kSequence, attn_width = kHeads * kHeadSize;
  const auto qkv = random_floats(attn_rows * 3 * attn_width, 20);
  const auto attn_dout = random_floats(attn_rows * attn_width, 21);
  auto& attn = o["attention.out"] = std::vector<float>(attn_rows * attn_width);
  auto& probs = o["attention.probs"] = std::vector<float>(kBatch * kHeads * kSequence * kSequence);
  be.attention_forward(host_view(attn), host_view(probs), host_view(qkv), kBatch, kSequence, kHeads,
                       kHeadSize);
  auto& dqkv = o["attention.dqkv"] = random_floats(qkv.size(), 22);
  be.attention_backward(host_view(dqkv), host_view(attn_dout), host_view(qkv), host_view(probs),
                        kBatch, kSequence, kHeads, kHeadSize);

  const auto tokens = random_ids(attn_rows, kVocabulary, 23);
  const auto wte = random_floats(kVocabulary * kChannels, 24);
  const auto wpe = random_floats(kSequence * kChannels, 25);
  auto& emb = o["embedding.out"] = std::vector<float>(attn_rows * kChannels);
  be.embedding_forward(host_view(emb), host_view(tokens), host_view(wte), host_view(wpe), kBatch,
                       kSequence, kChannels);
  auto& dwte = o["embedding.dwte"] = random_floats(wte.size(), 26);
  auto& dwpe = o["embedding.dwpe"] = random_floats(wpe.size(), 27);
  be.embedding_backward(host_view(dwte), host_view(dwpe), host_view(x), host_view(tokens), kBatch,
                        kSequence, kChannels);

  const auto logits = random_floats(kRows * kVocabulary, 28);
  const auto targets = random_ids(kRows, kVocabulary, 29);
  o.loss = be.cross_entropy_forward(host_view(logits), host_view(targets), kRows, kVocabulary);
  auto& dlogits = o["cross_entropy.dlogits"] = random_floats(logits.size(), 30);
  be.cross_entropy_backward(host_view(dlogits), host_view(logits), host_view(targets), kRows,
                            kVocabulary, 1.0 / kRows);

  auto& param = o["adamw.param"] = random_floats(kElements, 31);
  auto& m = o["adamw.m"] = random_floats(kElements, 32);
  auto& v = o["adamw.v"] = std::vector<float>(kElements, 0.25f);
  be.adamw_update(host_view(param), host_view(g_in), host_view(m), host_view(v), kElements, 1e-2,
                  0.9, 0.95, 1e-8, 0.1, 3);
  auto& scaled = o["scale"] = g_in;
  be.scale(host_view(scaled), 0.375);
  return o;
}

/// Loss, gradients and updated parameters of one training step (forward, backward, AdamW) of
/// a one-layer GPT stage on a CPU backend with `threads` threads.
Outputs run_training_step(int threads) {
  plan::Model m;
  m.name = "threads-test";
  m.family = "gpt";
  m.num_layers = 1;
  m.hidden = 32;
  m.heads = 4;
  m.sequence = 32;
  m.vocabulary = 64;
  const int samples = 7;  // 224 rows: three GEMM panels; 28 (sample, head) pairs
  auto backend = test::make_cpu_backend(threads);
  StageModuleOptions options;
  options.first_layer = 0;
  options.end_layer = m.num_layers + 2;
  options.seed = 3;
  auto stage = make_gpt_stage(m, options, *backend, nullptr);
  MicroBatchTokens tokens;
  tokens.samples = samples;
  tokens.inputs = random_ids(samples * m.sequence, m.vocabulary, 9);
  tokens.targets = random_ids(samples * m.sequence, m.vocabulary, 10);
  stage->zero_gradients();
  Outputs o;
  o.loss = stage->forward(0, tokens, nullptr, nullptr);
  stage->backward(0, nullptr, nullptr, 1.0 / (samples * m.sequence));
  for (const ParameterView& p : stage->parameters()) {
    o[p.name + ".grad"] = test::host_floats(*backend, p.gradient);
    std::vector<float> m1(p.count, 0.0f), v1(p.count, 0.0f);
    backend->adamw_update(p.value, p.gradient, test::host_view(m1), test::host_view(v1), p.count,
                          1e-3, 0.9, 0.95, 1e-8, 0.1, 1);
    o[p.name] = test::host_floats(*backend, p.value);
  }
  return o;
}

/// Bitwise equality of n values (not ==, which equates -0 and +0 and fails NaN with itself).
template <class T>
bool same_bits(const T* a, const T* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(T)) == 0;
}

/// Bitwise equality, output by output.
void check_identical(const Outputs& a, const Outputs& b) {
  CHECK(same_bits(&a.loss, &b.loss, 1));
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& entry : a.tensors) {  // not a structured binding: INFO captures it
    INFO(entry.first);
    const std::vector<float>& other = b.tensors.at(entry.first);
    REQUIRE(entry.second.size() == other.size());
    CHECK(same_bits(entry.second.data(), other.data(), other.size()));
  }
}

}  // namespace

TEST_CASE("cpu backend: every op gives the same bits with 1, 2 and 3 threads") {
  const Outputs one = run_every_op(1);
  CHECK(one.loss > 0.0);
  for (const float value : one.tensors.at("layernorm.rstd")) REQUIRE(std::isfinite(value));
  check_identical(one, run_every_op(2));
  check_identical(one, run_every_op(3));
}

TEST_CASE("cpu backend: a training step gives the same bits with 1 and 2 threads") {
  const Outputs one = run_training_step(1);
  CHECK(one.loss > 0.0);
  CHECK(one.tensors.size() > 10);
  check_identical(one, run_training_step(2));
}

TEST_CASE("cpu backend: the panel-split GEMM equals one Eigen GEMM over all rows") {
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto a = random_floats(kRows * kChannels, 40),
             b = random_floats(kOutChannels * kChannels, 41);
  auto backend = test::make_cpu_backend(2);
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    INFO("transpositions " << t);
    std::vector<float> c(kRows * kOutChannels);
    backend->matmul(ta, tb, kRows, kOutChannels, kChannels, test::host_view(a), test::host_view(b),
                    test::host_view(c), false);
    Eigen::Map<const RowMatrix> A(a.data(), ta ? kChannels : kRows, ta ? kRows : kChannels);
    Eigen::Map<const RowMatrix> B(b.data(), tb ? kOutChannels : kChannels,
                                  tb ? kChannels : kOutChannels);
    RowMatrix whole(kRows, kOutChannels);
    if (ta && tb)
      whole.noalias() = A.transpose() * B.transpose();
    else if (ta)
      whole.noalias() = A.transpose() * B;
    else if (tb)
      whole.noalias() = A * B.transpose();
    else
      whole.noalias() = A * B;
    CHECK(same_bits(whole.data(), c.data(), c.size()));
  }
}

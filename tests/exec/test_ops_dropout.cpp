// File: test_ops_dropout.cpp
// Dropout on the CPU backend: the mask is a function of (stream, row, column) only, kept
// elements are scaled by exactly 1 / (1 - p), the kept share is 1 - p, and attention dropout's
// backward matches finite differences through the same mask.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "backend/kernel_math/dropout_math.h"
#include "whale/exec/backend/backend.h"
#include "finite_differences.h"
#include "host_views.h"

using namespace whale::exec;
using whale::exec::test::dot;
using whale::exec::test::gradient_error;
using whale::exec::test::host_view;
using whale::exec::test::make_cpu_backend;
using whale::exec::test::random_vector;

TEST_CASE("dropout keeps an element at 1/(1-p) or zeroes it, 1 - p of them kept") {
  auto be = make_cpu_backend();
  const int rows = 300, channels = 400;
  std::vector<float> data(static_cast<std::size_t>(rows) * channels, 1.0f);
  be->dropout(host_view(data), DropoutSite{42, 0.2}, 0, rows, channels);
  const float scale = static_cast<float>(1.0 / 0.8);
  std::size_t kept = 0;
  for (float x : data) {
    CHECK((x == 0.0f || x == scale));
    kept += x != 0.0f;
  }
  // 120,000 draws: the kept share's standard deviation is 0.0012.
  CHECK(static_cast<double>(kept) / data.size() == doctest::Approx(0.8).epsilon(0.01));
}

TEST_CASE("an inactive dropout leaves the data alone") {
  auto be = make_cpu_backend();
  const auto data = random_vector(60, 3);
  auto out = data;
  be->dropout(host_view(out), DropoutSite{42, 0.0}, 7, 6, 10);
  CHECK(out == data);
}

TEST_CASE("a dropout mask depends on the global row and column, not on the rows given") {
  auto be = make_cpu_backend();
  const int channels = 9;
  const auto data = random_vector(30 * channels, 4);
  auto whole = data;
  be->dropout(host_view(whole), DropoutSite{7, 0.5}, 100, 30, channels);
  // Rows 10..19 alone, as a sequence-parallel rank holding them would drop them.
  std::vector<float> part(data.begin() + 10 * channels, data.begin() + 20 * channels);
  be->dropout(host_view(part), DropoutSite{7, 0.5}, 110, 10, channels);
  CHECK(part == std::vector<float>(whole.begin() + 10 * channels, whole.begin() + 20 * channels));
  // Another stream (another step, layer or site) draws another mask.
  auto other = data;
  be->dropout(host_view(other), DropoutSite{8, 0.5}, 100, 30, channels);
  CHECK(other != whole);
}

TEST_CASE("dropout factors: one hash's four 16-bit lanes decide four neighbouring columns") {
  const kmath::DropoutScalars d = kmath::dropout_scalars(11, 0.5);
  for (uint64_t row : {0ull, 5ull, 1000000007ull})
    for (uint64_t column = 0; column < 12; ++column) {
      const uint64_t h = kmath::splitmix64(kmath::splitmix64(11 + row) + column / 4);
      const uint32_t lane = static_cast<uint32_t>(h >> (16 * (column % 4))) & 0xFFFFu;
      CHECK(kmath::dropout_factor(d, row, column) == (lane >= 32768u ? 2.0f : 0.0f));
    }
}

TEST_CASE("dropout factors: the hand-checked threshold and scale of p = 0.25") {
  const kmath::DropoutScalars d = kmath::dropout_scalars(1, 0.25);
  CHECK(d.active);
  CHECK(d.threshold == 16384u);  // 0.25 * 2^16
  CHECK(d.keep_scale == 1.0f / 0.75f);
  CHECK_FALSE(kmath::dropout_scalars(1, 0.0).active);
  CHECK(kmath::dropout_factor(kmath::dropout_scalars(1, 0.0), 5, 6) == 1.0f);
}

TEST_CASE("attention dropout: a shard of heads draws its part of the whole model's mask") {
  auto be = make_cpu_backend();
  const int B = 2, T = 5, NH = 4, HS = 3, C = NH * HS;
  AttentionDropout whole_mask;
  whole_mask.site = {99, 0.4};
  whole_mask.first_sample = 6;
  whole_mask.total_heads = NH;
  const auto qkv = random_vector(B * T * 3 * C, 21);
  std::vector<float> out(B * T * C), probs(B * NH * T * T);
  be->attention_forward(host_view(out), host_view(probs), host_view(qkv), B, T, NH, NH, HS, whole_mask);
  // Heads 2 and 3 alone (tensor-parallel rank 1 of 2): their columns of qkv and of the output.
  const int Cl = C / 2;
  std::vector<float> shard_qkv(B * T * 3 * Cl), shard_out(B * T * Cl), shard_probs(B * 2 * T * T);
  for (int n = 0; n < B * T; ++n)
    for (int part = 0; part < 3; ++part)
      for (int c = 0; c < Cl; ++c)
        shard_qkv[(n * 3 + part) * Cl + c] = qkv[n * 3 * C + part * C + Cl + c];
  AttentionDropout shard_mask = whole_mask;
  shard_mask.first_head = 2;
  be->attention_forward(host_view(shard_out), host_view(shard_probs), host_view(shard_qkv), B, T, 2, 2,
                        HS, shard_mask);
  for (int n = 0; n < B * T; ++n)
    for (int c = 0; c < Cl; ++c) CHECK(shard_out[n * Cl + c] == out[n * C + Cl + c]);
}

TEST_CASE("attention dropout: the saved probabilities stay undropped; dqkv matches finite differences") {
  auto be = make_cpu_backend();
  const int B = 2, T = 6, NH = 2, HS = 3, C = NH * HS;
  AttentionDropout dropout;
  dropout.site = {1234, 0.3};
  dropout.total_heads = NH;
  auto qkv = random_vector(B * T * 3 * C, 22);
  const auto r = random_vector(B * T * C, 23);
  std::vector<float> out(B * T * C), probs(B * NH * T * T), plain(out.size());
  auto loss = [&] {
    be->attention_forward(host_view(out), host_view(probs), host_view(qkv), B, T, NH, NH, HS, dropout);
    return dot(out, r);
  };
  be->attention_forward(host_view(plain), host_view(probs), host_view(qkv), B, T, NH, HS);
  const auto undropped = probs;
  loss();
  CHECK(probs == undropped);
  CHECK(out != plain);
  std::vector<float> dqkv(qkv.size());
  be->attention_backward(host_view(dqkv), host_view(r), host_view(qkv), host_view(probs), B, T, NH,
                         NH, HS, dropout);
  CHECK(gradient_error(qkv, loss, dqkv, 1e-3f) <= 1e-3);
}

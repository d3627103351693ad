// File: test_vocabulary_parallel.cpp
// The vocabulary-parallel embedding and cross-entropy on the CPU backend: the vocabulary's
// split, token rows per slice, the statistics' combination (a hand-checked row), and every
// slice's loss and gradients against the whole vocabulary's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "finite_differences.h"
#include "host_views.h"
#include "model/vocabulary_parallel.h"
#include "whale/exec/backend/backend.h"

namespace {
using namespace whale::exec;
using whale::exec::test::host_view;
using whale::exec::test::make_cpu_backend;
using whale::exec::test::random_vector;

/// Columns [first, first + count) of a (rows, columns) row-major matrix.
std::vector<float> columns_of(const std::vector<float>& m, int rows, int columns, VocabularyShard s) {
  std::vector<float> out;
  for (int r = 0; r < rows; ++r)
    for (int c = s.first; c < s.first + s.count; ++c) out.push_back(m[static_cast<std::size_t>(r) * columns + c]);
  return out;
}

/// Every slice's statistics in its slot, as the all-reduce over the tensor group leaves them.
std::vector<float> gathered_statistics(Backend& be, const std::vector<float>& logits,
                                       const std::vector<int32_t>& targets, int rows, int vocabulary,
                                       int tp) {
  std::vector<float> gathered;
  for (int rank = 0; rank < tp; ++rank) {
    const VocabularyShard shard = vocabulary_shard(vocabulary, rank, tp);
    const std::vector<float> slice = columns_of(logits, rows, vocabulary, shard);
    const std::vector<int32_t> local = shard_token_rows(targets, vocabulary, shard);
    std::vector<float> statistics(static_cast<std::size_t>(rows) * kShardStatisticsFloats);
    be.cross_entropy_shard_statistics(host_view(slice), host_view(local), rows, shard.count,
                                      host_view(statistics));
    gathered.insert(gathered.end(), statistics.begin(), statistics.end());
  }
  return gathered;
}
}  // namespace

TEST_CASE("vocabulary_shard: balanced runs of rows, each row on one rank, none empty") {
  CHECK(vocabulary_shard(10, 0, 3).first == 0);
  CHECK(vocabulary_shard(10, 0, 3).count == 3);
  CHECK(vocabulary_shard(10, 1, 3).first == 3);
  CHECK(vocabulary_shard(10, 1, 3).count == 3);
  CHECK(vocabulary_shard(10, 2, 3).first == 6);
  CHECK(vocabulary_shard(10, 2, 3).count == 4);
  CHECK(vocabulary_shard(256, 1, 2).first == 128);
  CHECK(vocabulary_shard(256, 1, 2).count == 128);
  CHECK(vocabulary_shard(50257, 7, 8).first + vocabulary_shard(50257, 7, 8).count == 50257);
  CHECK(vocabulary_shard(7, 0, 1).count == 7);
  CHECK_THROWS_WITH(vocabulary_shard(10, 0, 11), doctest::Contains("leaves a rank without a token row"));
}

TEST_CASE("shard_token_rows: rows of the slice, -1 for another rank's, out-of-range tokens refused") {
  const VocabularyShard middle{3, 3};
  CHECK(shard_token_rows({0, 3, 5, 9, 6, 2}, 10, middle) == std::vector<int32_t>{-1, 0, 2, -1, -1, -1});
  CHECK_THROWS_WITH(shard_token_rows({1, 10}, 10, middle), doctest::Contains("token 10 outside vocabulary 0..9"));
  CHECK_THROWS_AS(shard_token_rows({-1}, 10, middle), std::out_of_range);
}

TEST_CASE("vocabulary-parallel cross-entropy of one hand-checked row over two slices") {
  // Logits [1, 2, 3], target 2; tp 2 splits them into [1] and [2, 3].
  auto be = make_cpu_backend();
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const std::vector<int32_t> targets = {2};
  const std::vector<float> gathered = gathered_statistics(*be, logits, targets, 1, 3, 2);
  // Slice 0: max 1, sum 1, no target. Slice 1: max 3, sum e^-1 + 1, target logit 3.
  CHECK(gathered[0] == 1.0f);
  CHECK(gathered[1] + gathered[2] == doctest::Approx(1.0));
  CHECK(gathered[3] == 0.0f);
  CHECK(gathered[4] == 3.0f);
  CHECK(static_cast<double>(gathered[5]) + gathered[6] == doctest::Approx(1.0 + std::exp(-1.0)).epsilon(1e-14));
  CHECK(gathered[7] == 3.0f);
  std::vector<float> log_sum_exp;
  const double loss = combine_shard_statistics(gathered, 2, 1, &log_sum_exp);
  const double expected_lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));  // 3.40760596
  CHECK(static_cast<double>(log_sum_exp[0]) + log_sum_exp[1] == doctest::Approx(expected_lse).epsilon(1e-14));
  CHECK(loss == doctest::Approx(expected_lse - 3.0).epsilon(1e-14));  // 0.40760596
  CHECK_THROWS_AS(combine_shard_statistics(gathered, 3, 1, &log_sum_exp), std::invalid_argument);
}

TEST_CASE("vocabulary-parallel cross-entropy over three uneven slices equals the whole vocabulary's") {
  auto be = make_cpu_backend();
  const int N = 4, V = 7, tp = 3;  // slices of 2, 2 and 3 columns
  const std::vector<float> logits = random_vector(N * V, 61, 3.0f);
  const std::vector<int32_t> targets = {0, 6, 3, 2};  // in slices 0, 2, 1, 1
  const double whole = be->cross_entropy_forward(host_view(logits), host_view(targets), N, V);
  std::vector<float> whole_gradient(N * V, 0.0f);
  be->cross_entropy_backward(host_view(whole_gradient), host_view(logits), host_view(targets), N, V, 0.5);

  std::vector<float> log_sum_exp;
  const double loss = combine_shard_statistics(gathered_statistics(*be, logits, targets, N, V, tp), tp, N, &log_sum_exp);
  CHECK(loss == doctest::Approx(whole).epsilon(1e-12));
  for (int rank = 0; rank < tp; ++rank) {
    const VocabularyShard shard = vocabulary_shard(V, rank, tp);
    std::vector<float> slice = columns_of(logits, N, V, shard);
    be->cross_entropy_shard_backward_in_place(host_view(slice), host_view(shard_token_rows(targets, V, shard)),
                                              host_view(log_sum_exp), N, shard.count, 0.5);
    const std::vector<float> expected = columns_of(whole_gradient, N, V, shard);
    for (std::size_t i = 0; i < slice.size(); ++i) CHECK(slice[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

TEST_CASE("vocabulary-parallel embedding: the slices' rows summed equal the whole table's") {
  auto be = make_cpu_backend();
  const int B = 2, T = 3, C = 4, V = 5, tp = 2;  // slices [0, 2) and [2, 5)
  const std::vector<int32_t> tokens = {4, 1, 4, 0, 2, 1};
  const std::vector<float> wte = random_vector(V * C, 71), wpe = random_vector(T * C, 72);
  const std::vector<float> no_positions(T * C, 0.0f);
  std::vector<float> whole(B * T * C), sum(B * T * C, 0.0f);
  be->embedding_forward(host_view(whole), host_view(tokens), host_view(wte), host_view(wpe), B, T, C);
  const std::vector<float> dout = random_vector(whole.size(), 73);
  std::vector<float> whole_dwte(V * C, 0.0f), whole_dwpe(T * C, 0.0f);
  be->embedding_backward(host_view(whole_dwte), host_view(whole_dwpe), host_view(dout), host_view(tokens), B, T, C);
  for (int rank = 0; rank < tp; ++rank) {
    const VocabularyShard shard = vocabulary_shard(V, rank, tp);
    const std::vector<float> table(wte.begin() + shard.first * C, wte.begin() + (shard.first + shard.count) * C);
    const std::vector<int32_t> rows = shard_token_rows(tokens, V, shard);
    std::vector<float> partial(whole.size());
    be->embedding_forward(host_view(partial), host_view(rows), host_view(table),
                          host_view(rank == 0 ? wpe : no_positions), B, T, C);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += partial[i];
    std::vector<float> dwte(table.size(), 0.0f), dwpe(T * C, 0.0f);
    be->embedding_backward(host_view(dwte), host_view(dwpe), host_view(dout), host_view(rows), B, T, C);
    CHECK(dwte == std::vector<float>(whole_dwte.begin() + shard.first * C,
                                     whole_dwte.begin() + (shard.first + shard.count) * C));
    CHECK(dwpe == whole_dwpe);  // the positions' gradient on every rank
  }
  CHECK(sum == whole);  // one token row and the position, added once, on one rank each
}

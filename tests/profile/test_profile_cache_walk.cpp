// File: test_profile_cache_walk.cpp
// The cache walk's block counts and the warm fractions its walks imply; one quick walk on this
// machine for the curve's shape.
#include <doctest/doctest.h>

#include <vector>

#include "whale/exec/backend/backend_factory.h"
#include "whale/exec/profile/profile_cpu_cache_walk.h"

using namespace whale::exec;

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

TEST_CASE("the walks span a quarter to four times the cache in whole blocks, as many whatever the cache") {
  // 16 MiB and blocks of 2 MiB: 4, 8, 16, 32, 64 MiB.
  CHECK(cache_walk_block_counts(16 * kMiB, 2 * kMiB, true) == std::vector<int>{2, 4, 8, 16, 32});
  CHECK(cache_walk_block_counts(16 * kMiB, 2 * kMiB, false) == std::vector<int>{1, 2, 4, 8, 16, 32});
  // A small cache rounds to at least one block; the counts repeat but are as many.
  CHECK(cache_walk_block_counts(1 * kMiB, 2 * kMiB, true) == std::vector<int>{1, 1, 1, 1, 2});
  // A cache of 512 MiB stops at what 1 GiB holds: 512 blocks of 2 MiB.
  CHECK(cache_walk_block_counts(512 * kMiB, 2 * kMiB, true) == std::vector<int>{64, 128, 256, 512, 512});
}

TEST_CASE("a walk's warm fraction is where its time lies from cold to warm, clamped and non-increasing") {
  // Cold 10 s, warm 6 s a block (whole seconds keep the quotients exact): 5 -> 1 (clamped),
  // 7 -> 0.75, 9 -> 0.25, 11 -> 0 (clamped), and 8 after 9 stays 0.25 (a larger walk is never
  // warmer).
  CHECK(cache_walk_warm_fractions({5, 7, 9, 8, 11}, 10, 6) == std::vector<double>{1.0, 0.75, 0.25, 0.25, 0.0});
  // Cold within 5% of warm: nothing to read against.
  CHECK(cache_walk_warm_fractions({1e-3}, 1.04e-3, 1e-3).empty());
  CHECK(cache_walk_warm_fractions({1e-3}, 1e-3, 0).empty());
}

TEST_CASE("a quick walk on this machine gives a non-increasing curve within [0, 1], or none") {
  auto backend = make_backend(BackendRequest{});
  TimerOptions timer;
  timer.samples = 1;
  timer.warmup_calls = 0;
  // Cold 2 ms and warm 1 ms a block stand in for the GEMM curve's: any machine's walk lies
  // somewhere against them; the curve's shape is what holds.
  const whale::plan::EfficiencyCurve curve =
      measure_warm_fraction_by_working_set(*backend, 4 * kMiB, 2e-3, 1e-3, true, timer, [](const std::string&) {});
  REQUIRE_FALSE(curve.empty());
  const auto& points = curve.points();
  for (std::size_t i = 0; i < points.size(); ++i) {
    CHECK(points[i].efficiency >= 0);
    CHECK(points[i].efficiency <= 1);
    if (i > 0) {
      CHECK(points[i].size > points[i - 1].size);
      CHECK(points[i].efficiency <= points[i - 1].efficiency);
    }
  }
}

// File: test_partition_shares.cpp
// The layer partition (exact min-max under memory limits, against the dynamic program; the
// per-group split of multi-chunk schedules) and the integer shares (largest remainder, positive, summing to the micro-batch).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "whale/plan/search_partition.h"

using namespace whale::plan;

namespace {

// Stage s runs layer i in weight[i] / speed[s] seconds.
RangeCost additive(const std::vector<double>& weight, const std::vector<double>& speed) {
  return [weight, speed](int s, int a, int e) {
    return std::accumulate(weight.begin() + a, weight.begin() + e, 0.0) / speed[s];
  };
}

const RangeFits kAlwaysFits = [](int, int, int) { return true; };

}  // namespace

TEST_CASE("partition of four layers on two equal stages is the hand-checked optimum") {
  // [1,2,3 | 4] has bottleneck 6; [1,2 | 3,4] has 7; [1 | 2,3,4] has 9.
  const auto b = partition_layers(4, 2, additive({1, 2, 3, 4}, {1, 1}), kAlwaysFits);
  CHECK(b == std::vector<int>{0, 3, 4});
}

TEST_CASE("a stage twice as fast takes twice the work") {
  // Eight unit layers, stage 0 at speed 2, stage 1 at speed 1: [0,5) -> 2.5 s, [5,8) -> 3 s
  // is optimal (6 | 2 gives 3 and 2; 5 | 3 gives 2.5 and 3; both 3 s; greedy takes 6).
  const auto b = partition_layers(8, 2, additive(std::vector<double>(8, 1.0), {2, 1}), kAlwaysFits);
  REQUIRE(b.size() == 3);
  CHECK(b[1] == 6);
  CHECK(partition_bottleneck_dp(8, 2, additive(std::vector<double>(8, 1.0), {2, 1}), kAlwaysFits) == 3.0);
}

TEST_CASE("memory limits move layers to the stage that can hold them") {
  // Stage 0 may hold at most 2 layers although it is the faster one.
  const RangeFits fits = [](int s, int a, int e) { return s != 0 || e - a <= 2; };
  const auto b = partition_layers(6, 2, additive(std::vector<double>(6, 1.0), {4, 1}), fits);
  CHECK(b == std::vector<int>{0, 2, 6});
  CHECK(partition_layers(6, 2, additive(std::vector<double>(6, 1.0), {1, 1}),
                         [](int, int a, int e) { return e - a <= 2; })
            .empty());
}

TEST_CASE("partition_layers matches the dynamic program on many heterogeneous cases") {
  unsigned seed = 12345;
  auto next = [&]() { return (seed = seed * 1103515245u + 12345u) % 1000 / 100.0 + 0.1; };
  for (int trial = 0; trial < 200; ++trial) {
    const int layers = 3 + trial % 14;
    const int stages = 1 + trial % std::min(layers, 5);
    std::vector<double> weight, speed;
    for (int i = 0; i < layers; ++i) weight.push_back(next());
    for (int s = 0; s < stages; ++s) speed.push_back(next());
    const double cap = 2.5 + trial % 4;  // weight units a stage may hold
    const RangeFits fits = [&](int, int a, int e) {
      return std::accumulate(weight.begin() + a, weight.begin() + e, 0.0) <= cap * 1.0 + 100 * (trial % 3 == 0);
    };
    const RangeCost cost = additive(weight, speed);
    const double dp = partition_bottleneck_dp(layers, stages, cost, fits);
    const auto b = partition_layers(layers, stages, cost, fits);
    CAPTURE(trial);
    if (dp == std::numeric_limits<double>::infinity()) {
      CHECK(b.empty());
      continue;
    }
    REQUIRE(b.size() == static_cast<size_t>(stages + 1));
    double bottleneck = 0;
    for (int s = 0; s < stages; ++s) {
      CHECK(fits(s, b[s], b[s + 1]));
      bottleneck = std::max(bottleneck, cost(s, b[s], b[s + 1]));
    }
    CHECK(bottleneck == doctest::Approx(dp).epsilon(1e-6));
  }
}

TEST_CASE("grouped partition balances each group's sum over its chunks") {
  // Seven unit layers and a head of 3 on two equal groups, stages A B A B (interleaved, two
  // chunks). Every split has a stage of 3 (the head), so the per-stage min-max split may leave
  // group B with 6 of the 10 units; the grouped split gives each group 5: A [0,2) + [4,7),
  // B [2,4) + the head.
  const std::vector<double> weight{1, 1, 1, 1, 1, 1, 1, 3};
  const RangeCost cost = additive(weight, {1, 1, 1, 1});
  const std::vector<int> group_of{0, 1, 0, 1};
  auto largest_group_sum = [&](const std::vector<int>& b) {
    double sum[2] = {0, 0};
    for (int s = 0; s < 4; ++s) sum[group_of[s]] += cost(s, b[s], b[s + 1]);
    return std::max(sum[0], sum[1]);
  };
  const auto per_stage = partition_layers(8, 4, cost, kAlwaysFits);
  REQUIRE(per_stage.size() == 5);
  CHECK(largest_group_sum(per_stage) == 6.0);
  const auto grouped = partition_layers_grouped(8, group_of, cost, kAlwaysFits, 6.0 / 2, 6.0);
  CHECK(grouped == std::vector<int>{0, 2, 4, 7, 8});
  CHECK(largest_group_sum(grouped) == 5.0);
  // A group twice as fast takes twice the work, split evenly over its chunks: 12 unit layers
  // on A (speed 2) B (speed 1) A B: A holds 8 layers (4 s), B 4 (4 s).
  const auto fast = partition_layers_grouped(12, group_of, additive(std::vector<double>(12, 1.0), {2, 1, 2, 1}),
                                             kAlwaysFits, 0.0, 12.0);
  CHECK(fast == std::vector<int>{0, 4, 6, 10, 12});
  // No split within the upper bound: empty.
  CHECK(partition_layers_grouped(8, group_of, cost, kAlwaysFits, 0.0, 4.0).empty());
}

TEST_CASE("proportional shares: least slowest replica, positive, summing to the micro-batch") {
  // Quotas 5, 2.5, 2.5: {6,3,3} is the least time (3) taking at least 10; the surplus comes
  // back from the shares furthest above their quotas, replica 0 first, then the later replica.
  CHECK(proportional_shares(10, {2, 1, 1}) == std::vector<int>{5, 3, 2});
  CHECK(proportional_shares(12, {3, 1}) == std::vector<int>{9, 3});
  CHECK(proportional_shares(7, {1, 1, 1}) == std::vector<int>{3, 2, 2});
  // Quotas 2.5, 0.25, 0.25: floors give 2, 0, 0; the leftover goes to replica 0, then the
  // zero shares are raised to 1 from the largest.
  CHECK(proportional_shares(3, {10, 1, 1}) == std::vector<int>{1, 1, 1});
  CHECK(proportional_shares(4, {10, 1, 1}) == std::vector<int>{2, 1, 1});
  // Quotas 7.14, 1.43, 1.43: the largest remainder would give {7, 2, 1}, replica 1 taking 2 s;
  // {8, 1, 1} takes at most 1.6 s (Whale's balancing: the slowest replica sets the step).
  CHECK(proportional_shares(10, {5, 1, 1}) == std::vector<int>{8, 1, 1});
  CHECK(proportional_shares(16, {4, 4, 1, 1}) == std::vector<int>{7, 7, 1, 1});  // 1.75 s
  CHECK(even_shares(10, 4) == std::vector<int>{3, 3, 2, 2});
  // A forward of no time (a listed layer without compute) gives no speed to weigh by: even.
  const double instant = std::numeric_limits<double>::infinity();
  CHECK(proportional_shares(8, {instant, 1}) == std::vector<int>{4, 4});
  CHECK(proportional_shares(5, {0, 0}) == std::vector<int>{3, 2});
}

namespace {

// 97 layers of weight 1 but layer `heavy_at`, of `heavy`, on three stages of speeds 1, 2 and 1.5.
RangeCost unit_layers_and(int heavy_at, double heavy) {
  std::vector<double> weight(97, 1.0);
  weight[heavy_at] = heavy;
  return additive(weight, {1, 2, 1.5});
}

// Whether `b` splits those 97 layers over the three stages at exactly the dynamic program's
// optimum bottleneck.
bool optimal_split(const std::vector<int>& b, const RangeCost& cost) {
  if (b.size() != 4) return false;
  double bottleneck = 0;
  for (int s = 0; s < 3; ++s) bottleneck = std::max(bottleneck, cost(s, b[s], b[s + 1]));
  return bottleneck == partition_bottleneck_dp(97, 3, cost, kAlwaysFits);
}

}  // namespace

TEST_CASE("the bottleneck search moves each end to the cost value its test found: a few tests, not twenty halvings") {
  // A head of 6 (the last layer): the optimum is one of the range costs, and each test moves an
  // end onto one.
  // Counted: the passes of the greedy and the exact test (each starts at stage 0 from layer 0
  // with the longest range or a single layer), 11 here, where halving the bracket down to a
  // relative 1e-6 alone takes about 20.
  const RangeCost layers = unit_layers_and(96, 6.0);
  int passes = 0;
  const RangeCost cost = [&](int s, int a, int e) {
    if (s == 0 && a == 0 && (e == 97 - 2 || e == 1)) ++passes;   // the first probe of a pass
    return layers(s, a, e);
  };
  CHECK(optimal_split(partition_layers(97, 3, cost, kAlwaysFits), layers));
  CHECK(passes <= 12);
}

TEST_CASE("where every stage holds each single layer within the bound, the greedy split is final") {
  // A head of 6 (the last layer): every single layer lies far below the optimum bottleneck, so
  // no exact reachability test is run. Counted: the starts of the ranges stage 1 is asked about.
  // The greedy tests start it where stage 0 ended, one start a test (7 here); the exact test
  // starts it at every position stage 0 can reach (25 here).
  std::set<int> starts;
  auto counting = [&](const RangeCost& layers) -> RangeCost {
    starts.clear();
    return [&starts, layers](int s, int a, int e) {
      if (s == 1 && e - a > 1) starts.insert(a);
      return layers(s, a, e);
    };
  };
  const RangeCost layers = unit_layers_and(96, 6.0);
  CHECK(optimal_split(partition_layers(97, 3, counting(layers), kAlwaysFits), layers));
  CHECK(starts.size() <= 12);
  // Layer 50 of 60, which stage 0 could be given but not run within the optimum, brings the
  // exact test back, and the split is still the dynamic program's optimum.
  const RangeCost heavy = unit_layers_and(50, 60.0);
  CHECK(optimal_split(partition_layers(97, 3, counting(heavy), kAlwaysFits), heavy));
  CHECK(starts.size() > 12);
}

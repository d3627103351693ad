// File: test_expert_counts.cpp
// proportional_counts by hand: floors of the ideal shares, at least 1 each, the largest
// remainders (or excesses) settling the sum, ties to the lower rank.
#include <doctest/doctest.h>

#include "whale/plan/expert_counts.h"

using whale::plan::proportional_counts;

TEST_CASE("expert counts: proportional to the weights, summing to the experts") {
  CHECK(proportional_counts(4, {3, 1}) == std::vector<int>{3, 1});
  CHECK(proportional_counts(4, {1, 1}) == std::vector<int>{2, 2});
  // Ideal 7.1 and 0.9: floors 7 and 0, raised to 1.
  CHECK(proportional_counts(8, {7.9, 1}) == std::vector<int>{7, 1});
  // Ideal 1.67 each: floors 1, 1, 1, then one more to ranks 0 and 1 (ties to the lower rank).
  CHECK(proportional_counts(5, {1, 1, 1}) == std::vector<int>{2, 2, 1});
  // Ideal 7.84, 0.08, 0.08: floors 7, 1, 1 sum to 9, so the rank above its share gives one back.
  CHECK(proportional_counts(8, {100, 1, 1}) == std::vector<int>{6, 1, 1});
  // Ideal 2.5, 1.5: floors 2 and 1, the larger remainder (0.5 each: rank 0) gets the last one.
  CHECK(proportional_counts(4, {5, 3}) == std::vector<int>{3, 1});
}

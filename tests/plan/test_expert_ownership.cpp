// File: test_expert_ownership.cpp
// ExpertOwnership: which expert-parallel member holds which routed experts, even and uneven.
#include <doctest/doctest.h>

#include <stdexcept>

#include "whale/plan/expert_ownership.h"

using whale::plan::ExpertOwnership;

TEST_CASE("expert ownership: an even split gives experts / members each, in member order") {
  const ExpertOwnership even(8, 4, {});
  CHECK(even.members() == 4);
  CHECK(even.count(3) == 2);
  CHECK(even.first(3) == 6);
  CHECK(even.owner(0) == 0);
  CHECK(even.owner(5) == 2);
  CHECK(even.owner(7) == 3);
  const ExpertOwnership alone(4);
  CHECK((alone.members() == 1 && alone.count(0) == 4 && alone.owner(3) == 0));
}

TEST_CASE("expert ownership: counts [3, 1] and [1, 2, 1]") {
  const ExpertOwnership three_one(4, 2, {3, 1});
  CHECK(three_one.counts() == std::vector<int>{3, 1});
  CHECK(three_one.first(1) == 3);
  CHECK(three_one.owner(2) == 0);
  CHECK(three_one.owner(3) == 1);
  const ExpertOwnership middle(4, 3, {1, 2, 1});
  CHECK(middle.owner(0) == 0);
  CHECK(middle.owner(1) == 1);
  CHECK(middle.owner(2) == 1);
  CHECK(middle.owner(3) == 2);
  CHECK(middle.first(2) == 3);
}

TEST_CASE("expert ownership: counts that do not split the experts are refused") {
  CHECK_THROWS_AS(ExpertOwnership(4, 3, {}), std::invalid_argument);         // 3 does not divide 4
  CHECK_THROWS_AS(ExpertOwnership(4, 2, {3, 2}), std::invalid_argument);     // sum 5
  CHECK_THROWS_AS(ExpertOwnership(4, 2, {4, 0}), std::invalid_argument);     // a member without
  CHECK_THROWS_AS(ExpertOwnership(4, 3, {3, 1}), std::invalid_argument);     // 2 counts, 3 members
}

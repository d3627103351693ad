// File: test_gradient_clipping.cpp
// Clipping's pieces by hand: the coefficient (Megatron-LM's max_norm / (norm + 1e-6), only
// below 1) and the CPU backend's sum of squares, exact on small values and the same bits at
// any thread count. The global norm over parallel plans is checked end to end by
// scripts/equality_cli.sh clip.
#include <doctest/doctest.h>

#include <vector>

#include "host_views.h"
#include "whale/exec/runtime/gradient_clipping.h"

using namespace whale::exec;
using whale::exec::test::host_view;
using whale::exec::test::make_cpu_backend;

TEST_CASE("clip coefficient: max_norm / (norm + 1e-6) below 1, else 1; none without a bound") {
  CHECK(clip_coefficient(4.0, 1.0) == doctest::Approx(1.0 / (4.0 + 1e-6)));
  CHECK(clip_coefficient(0.5, 1.0) == 1.0);
  CHECK(clip_coefficient(1.0, 1.0) == doctest::Approx(1.0 - 1e-6));  // at the bound: just below 1
  CHECK(clip_coefficient(1e9, 0.0) == 1.0);
}

TEST_CASE("sum of squares: every element of every tensor, in double, thread count aside") {
  std::vector<float> a = {1, -2, 0.5f}, b = {3}, empty;
  auto be = make_cpu_backend();
  CHECK(be->sum_of_squares({host_view(a), host_view(b), host_view(empty)}) == 14.25);
  CHECK(be->sum_of_squares({}) == 0.0);
  std::vector<float> many(10001);  // three chunks of the parallel sum
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = 0.001f * static_cast<float>(i % 97) - 0.03f;
  const double one = make_cpu_backend(1)->sum_of_squares({host_view(many)});
  CHECK(make_cpu_backend(3)->sum_of_squares({host_view(many)}) == one);
  double reference = 0;
  for (float x : many) reference += double{x} * x;
  CHECK(one == doctest::Approx(reference).epsilon(1e-12));
}

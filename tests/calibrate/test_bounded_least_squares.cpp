// File: test_bounded_least_squares.cpp
// The bounded Levenberg-Marquardt solver recovers known parameters of a nonlinear model and
// stops at a bound when the unconstrained minimum lies outside the box.
#include <doctest/doctest.h>

#include <cmath>

#include "whale/sim/bounded_least_squares.h"

using namespace whale::sim;

TEST_CASE("the solver recovers a and b of y = a exp(b t) from exact data") {
  const auto residuals = [](const std::vector<double>& x) {
    std::vector<double> r;
    for (int t = 0; t < 5; ++t) r.push_back(x[0] * std::exp(x[1] * t) - 2.0 * std::exp(0.3 * t));
    return r;
  };
  const BoundedLeastSquaresResult fit = solve_bounded_least_squares(residuals, {1.0, 0.0}, {0.1, -1.0}, {10.0, 1.0});
  CHECK(fit.x[0] == doctest::Approx(2.0).epsilon(1e-9));
  CHECK(fit.x[1] == doctest::Approx(0.3).epsilon(1e-9));
  CHECK(fit.cost < 1e-20);
}

TEST_CASE("a minimum outside the box ends at the bound, the free parameter still fitted") {
  // (x0 - 5)^2 + (x1 - 1)^2 with x0 in [0, 3]: the answer is (3, 1), cost 4.
  const auto residuals = [](const std::vector<double>& x) { return std::vector<double>{x[0] - 5, x[1] - 1}; };
  const BoundedLeastSquaresResult fit = solve_bounded_least_squares(residuals, {0.5, 0.0}, {0.0, -2.0}, {3.0, 2.0});
  CHECK(fit.x[0] == 3.0);
  CHECK(fit.x[1] == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(fit.cost == doctest::Approx(4.0));
}

TEST_CASE("a start outside the box is clamped into it") {
  const auto residuals = [](const std::vector<double>& x) { return std::vector<double>{x[0] + 1}; };
  const BoundedLeastSquaresResult fit = solve_bounded_least_squares(residuals, {7.0}, {0.0}, {1.0});
  CHECK(fit.x[0] == 0.0);
  CHECK(fit.cost == doctest::Approx(1.0));
}

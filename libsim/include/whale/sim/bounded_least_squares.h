// File: bounded_least_squares.h
// A small Levenberg-Marquardt solver for nonlinear least squares over a few parameters kept
// inside box bounds (whale-calibrate fits at most a handful). Jacobians by finite differences.
#pragma once

#include <functional>
#include <vector>

namespace whale::sim {

/// Residuals r(x) of a problem: the solver minimises sum r_i(x)^2.
using ResidualFunction = std::function<std::vector<double>(const std::vector<double>&)>;

struct BoundedLeastSquaresResult {
  std::vector<double> x;  // the minimiser found, inside [low, high]
  double cost = 0;        // sum of squared residuals at x
  int iterations = 0;
};

/// Minimises sum r_i(x)^2 for low <= x <= high from `start` (clamped into the box). Each
/// iteration solves (J^T J + lambda diag(J^T J)) dx = -J^T r with a forward-difference J
/// (step 1e-6 of each bound's width, taken backward at the upper bound), projects x + dx onto
/// the box, and accepts it if the cost falls (lambda shrinks) or retries with a larger lambda.
/// Stops when a step changes the cost by less than 1e-14 relative, or after max_iterations.
/// Every bound must be finite with low < high.
BoundedLeastSquaresResult solve_bounded_least_squares(const ResidualFunction& residuals,
                                                      std::vector<double> start,
                                                      const std::vector<double>& low,
                                                      const std::vector<double>& high,
                                                      int max_iterations = 100);

/// Per component of x, whether the solver's forward-difference Jacobian at `x` (clamped into the
/// box) has a non-zero column there: whether any residual depends on that component. A
/// component whose column is zero is never moved by the solver.
std::vector<bool> nonzero_jacobian_columns(const ResidualFunction& residuals, std::vector<double> x,
                                           const std::vector<double>& low,
                                           const std::vector<double>& high);

}  // namespace whale::sim

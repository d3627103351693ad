// File: bounded_least_squares.cpp
// Projected Levenberg-Marquardt with Marquardt's diagonal scaling (bounded_least_squares.h).
#include "whale/sim/bounded_least_squares.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>

namespace whale::sim {
namespace {

double sum_of_squares(const std::vector<double>& r) {
  double sum = 0;
  for (double v : r) sum += v * v;
  return sum;
}

std::vector<double> clamp_into(std::vector<double> x, const std::vector<double>& low,
                               const std::vector<double>& high) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::clamp(x[i], low[i], high[i]);
  return x;
}

/// Solves the small dense system a x = b (n x n, row-major) by Gaussian elimination with
/// partial pivoting; a pivot below 1e-300 leaves that component at 0.
std::vector<double> solve_dense(std::vector<double> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t row = col + 1; row < n; ++row) {
      if (std::fabs(a[row * n + col]) > std::fabs(a[pivot * n + col])) pivot = row;
    }
    for (std::size_t k = 0; k < n; ++k) std::swap(a[col * n + k], a[pivot * n + k]);
    std::swap(b[col], b[pivot]);
    if (std::fabs(a[col * n + col]) < 1e-300) continue;
    for (std::size_t row = col + 1; row < n; ++row) {
      const double f = a[row * n + col] / a[col * n + col];
      for (std::size_t k = col; k < n; ++k) a[row * n + k] -= f * a[col * n + k];
      b[row] -= f * b[col];
    }
  }
  std::vector<double> x(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    if (std::fabs(a[i * n + i]) < 1e-300) continue;
    double sum = b[i];
    for (std::size_t k = i + 1; k < n; ++k) sum -= a[i * n + k] * x[k];
    x[i] = sum / a[i * n + i];
  }
  return x;
}

/// Forward-difference Jacobian, column j = d r / d x_j (row-major, rows = residuals).
std::vector<double> jacobian(const ResidualFunction& residuals, const std::vector<double>& x,
                             const std::vector<double>& r, const std::vector<double>& low,
                             const std::vector<double>& high) {
  const std::size_t m = r.size(), n = x.size();
  std::vector<double> j(m * n, 0.0);
  for (std::size_t c = 0; c < n; ++c) {
    std::vector<double> moved = x;
    double h = 1e-6 * (high[c] - low[c]);
    if (moved[c] + h > high[c]) h = -h;
    moved[c] += h;
    const std::vector<double> r2 = residuals(moved);
    for (std::size_t i = 0; i < m; ++i) j[i * n + c] = (r2[i] - r[i]) / h;
  }
  return j;
}

}  // namespace

std::vector<bool> nonzero_jacobian_columns(const ResidualFunction& residuals, std::vector<double> x,
                                           const std::vector<double>& low,
                                           const std::vector<double>& high) {
  x = clamp_into(std::move(x), low, high);
  const std::vector<double> r = residuals(x);
  const std::vector<double> j = jacobian(residuals, x, r, low, high);
  const std::size_t n = x.size();
  std::vector<bool> out(n, false);
  for (std::size_t i = 0; i < j.size(); ++i) out[i % n] = out[i % n] || j[i] != 0;
  return out;
}

BoundedLeastSquaresResult solve_bounded_least_squares(const ResidualFunction& residuals,
                                                      std::vector<double> start,
                                                      const std::vector<double>& low,
                                                      const std::vector<double>& high,
                                                      int max_iterations) {
  assert(start.size() == low.size() && start.size() == high.size());
  BoundedLeastSquaresResult out;
  out.x = clamp_into(std::move(start), low, high);
  std::vector<double> r = residuals(out.x);
  out.cost = sum_of_squares(r);
  const std::size_t m = r.size(), n = out.x.size();
  double lambda = 1e-3;
  for (; out.iterations < max_iterations && n > 0; ++out.iterations) {
    const std::vector<double> j = jacobian(residuals, out.x, r, low, high);
    std::vector<double> jtj(n * n, 0.0), jtr(n, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t a = 0; a < n; ++a) {
        jtr[a] += j[i * n + a] * r[i];
        for (std::size_t b = 0; b < n; ++b) jtj[a * n + b] += j[i * n + a] * j[i * n + b];
      }
    }
    bool improved = false;
    double change = 0;
    while (!improved && lambda < 1e12) {
      std::vector<double> damped = jtj, minus_jtr(n);
      for (std::size_t a = 0; a < n; ++a) {
        damped[a * n + a] += lambda * std::max(jtj[a * n + a], 1e-12);
        minus_jtr[a] = -jtr[a];
      }
      const std::vector<double> dx = solve_dense(damped, minus_jtr);
      std::vector<double> trial = out.x;
      for (std::size_t a = 0; a < n; ++a) trial[a] += dx[a];
      trial = clamp_into(std::move(trial), low, high);
      const std::vector<double> r_trial = residuals(trial);
      const double cost = sum_of_squares(r_trial);
      if (cost < out.cost) {
        change = out.cost - cost;
        out.x = std::move(trial);
        r = r_trial;
        out.cost = cost;
        lambda = std::max(lambda / 10, 1e-12);
        improved = true;
      } else {
        lambda *= 10;
      }
    }
    if (!improved || change <= 1e-14 * out.cost || out.cost < 1e-30) break;
  }
  return out;
}

}  // namespace whale::sim

// File: finite_differences.h
// Test helper: random inputs and the central-difference check of an analytic gradient, shared
// by the op and layer gradient tests.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace whale::exec::test {

/// n values uniform in [-scale, scale], from `seed`.
inline std::vector<float> random_vector(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// The dot product in double: the scalar loss sum_i a_i b_i of an op's output a and a fixed
/// random direction b, whose gradient with respect to the output is b.
inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

/// ||analytic - numeric|| / max(||analytic||, ||numeric||), numeric by central differences of
/// `loss` in each element of `x` (x is restored). Requires a nonzero gradient: a zero one would
/// make the check vacuous.
inline double gradient_error(std::vector<float>& x, const std::function<double()>& loss,
                             const std::vector<float>& analytic, float eps = 1e-2f) {
  double diff = 0.0, norm_a = 0.0, norm_n = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double plus = loss();
    x[i] = saved - eps;
    const double minus = loss();
    x[i] = saved;
    const double numeric = (plus - minus) / (2.0 * eps);
    diff += (analytic[i] - numeric) * (analytic[i] - numeric);
    norm_a += static_cast<double>(analytic[i]) * analytic[i];
    norm_n += numeric * numeric;
  }
  const double scale = std::sqrt(std::max(norm_a, norm_n));
  REQUIRE(scale > 0.0);
  return std::sqrt(diff) / scale;
}

}  // namespace whale::exec::test

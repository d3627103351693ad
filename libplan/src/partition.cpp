// File: partition.cpp
// Min-max layer partition over heterogeneous stages with memory limits: parametric search with
// greedy and exact feasibility tests, and the dynamic-programming reference.
#include <algorithm>
#include <cmath>
#include <limits>

#include "whale/plan/search_partition.h"

namespace whale::plan {
namespace {

// The parametric search stops when the bound is known to this relative precision: far finer
// than the analytic model's accuracy, and ~20 greedy passes.
constexpr double kRelativeTolerance = 1e-6;

// Greedy at bottleneck `bound`: each stage takes the longest range that stays within the
// bound and fits, leaving at least one layer per later stage. Empty when infeasible.
std::vector<int> greedy(int layers, int stages, const RangeCost& cost, const RangeFits& fits,
                        double bound) {
  std::vector<int> b(1, 0);
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    const int last_end = layers - (stages - 1 - s);
    int end = first;
    if (s == stages - 1) {
      end = layers;
      if (cost(s, first, end) > bound || !fits(s, first, end)) return {};
    } else {
      // The longest prefix within the bound: costs and fits are monotone, so binary search.
      int lo = first, hi = last_end;  // lo: known good (or the start), hi: upper candidate
      auto ok = [&](int e) { return cost(s, first, e) <= bound && fits(s, first, e); };
      if (ok(hi)) {
        lo = hi;
      } else {
        while (hi - lo > 1) {
          const int mid = (lo + hi) / 2;
          (ok(mid) ? lo : hi) = mid;
        }
      }
      end = lo;
      if (end == first) return {};
    }
    b.push_back(end);
    first = end;
  }
  return b;
}

// Exact feasibility at `bound` over reachable positions: after s stages, position e is
// reachable when some reachable a < e lets stage s hold [a, e). For a fixed start the valid ends
// form a prefix, and its end never decreases as the start grows, so one forward pointer per
// stage suffices: O(stages * layers) cost calls. Empty when infeasible.
std::vector<int> exact(int layers, int stages, const RangeCost& cost, const RangeFits& fits,
                       double bound) {
  // pred(s, e): the start of stage s - 1's range ending at e, -1 when e is unreachable after
  // s stages. One buffer per thread: the search calls this thousands of times.
  // Rows are cleared as they are reached: most tests fail after a few stages.
  thread_local std::vector<int> pred_buffer;
  const size_t row = static_cast<size_t>(layers) + 1;
  if (pred_buffer.size() < (static_cast<size_t>(stages) + 1) * row) pred_buffer.resize((static_cast<size_t>(stages) + 1) * row);
  auto pred = [&](int s, int e) -> int& { return pred_buffer[static_cast<size_t>(s) * row + e]; };
  std::fill_n(pred_buffer.begin(), row, -1);
  pred(0, 0) = 0;
  for (int s = 0; s < stages; ++s) {
    std::fill_n(pred_buffer.begin() + static_cast<std::ptrdiff_t>((s + 1) * row), row, -1);
    const int last_end = layers - (stages - 1 - s);
    int marked = 0, end = 0;
    for (int a = 0; a < layers; ++a) {
      if (pred(s, a) < 0) continue;
      end = std::max(end, a);
      while (end + 1 <= last_end && cost(s, a, end + 1) <= bound && fits(s, a, end + 1)) ++end;
      for (int x = std::max(a + 1, marked + 1); x <= end; ++x) pred(s + 1, x) = a;
      marked = std::max(marked, end);
    }
    if (marked == 0) return {};  // no position is reachable after s + 1 stages
  }
  if (pred(stages, layers) < 0) return {};
  std::vector<int> b(stages + 1, 0);
  for (int s = stages, e = layers; s > 0; e = pred(s, e), --s) b[s] = e;
  return b;
}

// Bisection of the bottleneck between lo (infeasible) and hi (feasible, with split `best`).
template <typename Test>
void bisect(double lo, double& hi, std::vector<int>& best, Test test) {
  for (int it = 0; it < 60 && hi - lo > kRelativeTolerance * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    std::vector<int> b = test(mid);
    if (b.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(b);
    }
  }
}

}  // namespace

std::vector<int> partition_layers(int layers, int stages, const RangeCost& cost,
                                  const RangeFits& fits, double upper) {
  if (stages < 1 || stages > layers) return {};
  double hi = upper;
  if (hi <= 0) {
    for (int s = 0; s < stages; ++s) hi = std::max(hi, cost(s, 0, layers));
  }
  auto greedy_at = [&](double t) { return greedy(layers, stages, cost, fits, t); };
  auto exact_at = [&](double t) { return exact(layers, stages, cost, fits, t); };
  // Greedy splits are fast but not always optimal when stages differ (an early stage that
  // takes too much can leave a slow later stage a layer it cannot run within the bound), so
  // the greedy optimum is then checked, and if need be improved, with the exact test.
  std::vector<int> best = greedy_at(hi);
  if (best.empty()) best = exact_at(hi);
  if (best.empty()) return {};
  bisect(0.0, hi, best, greedy_at);
  const double below = hi * (1 - 2 * kRelativeTolerance);
  std::vector<int> better = exact_at(below);
  if (!better.empty()) {
    double top = below;
    bisect(0.0, top, better, exact_at);
    best = std::move(better);
  }
  return best;
}

double partition_bottleneck_dp(int layers, int stages, const RangeCost& cost,
                               const RangeFits& fits) {
  const double inf = std::numeric_limits<double>::infinity();
  // dp[s][e]: best bottleneck placing layers [0, e) on stages [0, s).
  std::vector<std::vector<double>> dp(stages + 1, std::vector<double>(layers + 1, inf));
  dp[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int e = s; e <= layers; ++e) {
      for (int a = s - 1; a < e; ++a) {
        if (dp[s - 1][a] == inf || !fits(s - 1, a, e)) continue;
        dp[s][e] = std::min(dp[s][e], std::max(dp[s - 1][a], cost(s - 1, a, e)));
      }
    }
  }
  return dp[stages][layers];
}

}  // namespace whale::plan

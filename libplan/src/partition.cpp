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
// than the analytic model's accuracy. Halving alone reaches it in ~20 tests; bisect's tests,
// landing on cost values, mostly stop sooner.
constexpr double kRelativeTolerance = 1e-6;

// What a feasibility test at a bound tells: the split it found (empty when none), and how far
// the bound may move with the same answer. Every cost the test compared with the bound keeps
// its side for any bound in [bottleneck, next): a split's largest stage cost passes, and the
// least cost that failed is the first bound at which a comparison could turn.
struct BoundTest {
  std::vector<int> split;
  double bottleneck = 0;  // the split's largest stage cost (<= the bound)
  double next = std::numeric_limits<double>::infinity();  // the least compared cost above the bound
};

// cost(s, first, e) <= bound, recording a cost above it in test->next.
bool within(const RangeCost& cost, int s, int first, int e, double bound, BoundTest* test) {
  const double c = cost(s, first, e);
  if (c <= bound) return true;
  test->next = std::min(test->next, c);
  return false;
}

// The split's largest stage cost.
double bottleneck_of(const std::vector<int>& b, const RangeCost& cost) {
  double most = 0;
  for (size_t s = 0; s + 1 < b.size(); ++s) most = std::max(most, cost(static_cast<int>(s), b[s], b[s + 1]));
  return most;
}

// Greedy at bottleneck `bound`: each stage takes the longest range that stays within the
// bound and fits, leaving at least one layer per later stage. No split when infeasible. Every
// range it accepts lies within the split's bottleneck (a stage's accepted ranges are prefixes
// of its final one), so the test at the bottleneck takes the same steps.
BoundTest greedy(int layers, int stages, const RangeCost& cost, const RangeFits& fits, double bound) {
  BoundTest test;
  std::vector<int> b(1, 0);
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    const int last_end = layers - (stages - 1 - s);
    int end = first;
    if (s == stages - 1) {
      end = layers;
      if (!within(cost, s, first, end, bound, &test) || !fits(s, first, end)) return test;
    } else {
      // The longest prefix within the bound: costs and fits are monotone, so binary search.
      int lo = first, hi = last_end;  // lo: known good (or the start), hi: upper candidate
      auto ok = [&](int e) { return within(cost, s, first, e, bound, &test) && fits(s, first, e); };
      if (ok(hi)) {
        lo = hi;
      } else {
        while (hi - lo > 1) {
          const int mid = (lo + hi) / 2;
          (ok(mid) ? lo : hi) = mid;
        }
      }
      end = lo;
      if (end == first) return test;
    }
    b.push_back(end);
    first = end;
  }
  test.bottleneck = bottleneck_of(b, cost);
  test.split = std::move(b);
  return test;
}

// Exact feasibility at `bound` over reachable positions: after s stages, position e is
// reachable when some reachable a < e lets stage s hold [a, e). For a fixed start the valid ends
// form a prefix, and its end never decreases as the start grows, so one forward pointer per
// stage suffices: O(stages * layers) cost calls. Empty when infeasible.
BoundTest exact(int layers, int stages, const RangeCost& cost, const RangeFits& fits, double bound) {
  BoundTest test;
  // pred(s, e): the start of stage s - 1's range ending at e, -1 when e is unreachable after
  // s stages. One buffer per thread: the search calls this thousands of times.
  // Rows are cleared as they are reached: most tests fail after a few stages.
  thread_local std::vector<int> pred_buffer;
  const size_t row = static_cast<size_t>(layers) + 1;
  const size_t cells = (static_cast<size_t>(stages) + 1) * row;
  if (pred_buffer.size() < cells) pred_buffer.resize(cells);
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
      while (end + 1 <= last_end && within(cost, s, a, end + 1, bound, &test) && fits(s, a, end + 1)) ++end;
      for (int x = std::max(a + 1, marked + 1); x <= end; ++x) pred(s + 1, x) = a;
      marked = std::max(marked, end);
    }
    if (marked == 0) return test;  // no position is reachable after s + 1 stages
  }
  if (pred(stages, layers) < 0) return test;
  std::vector<int> b(stages + 1, 0);
  for (int s = stages, e = layers; s > 0; e = pred(s, e), --s) b[s] = e;
  test.bottleneck = bottleneck_of(b, cost);
  test.split = std::move(b);
  return test;
}

// Whether every stage can hold, within `bound`, every single layer it could be given (stage s
// of a split starts at layer s to layers - stages + s). Then the greedy test fails only where no
// split exists: by induction its split is ahead of (or at) any split within the bound after
// each stage, where it is behind it takes at least that split's range (costs and fits are
// monotone), where it is a whole stage ahead it takes at least one layer, and its last stage
// holds part of the other's last range. So the greedy bisection alone is exact.
bool single_layers_within(int layers, int stages, const RangeCost& cost, const RangeFits& fits, double bound) {
  for (int s = 0; s < stages; ++s) {
    for (int l = s; l <= layers - stages + s; ++l) {
      if (!(cost(s, l, l + 1) <= bound) || !fits(s, l, l + 1)) return false;
    }
  }
  return true;
}

// Bisection of the bottleneck between lo (every bound below it infeasible) and hi (feasible,
// with split `best`), each test moving the end it lands on as far as its answer holds: a
// feasible test to its split's bottleneck, an infeasible one to the least cost above its bound
// (both are cost values, so the search lands on the optimum's own value in a few tests where
// halving alone takes twenty).
template <typename Test>
void bisect(double lo, double& hi, std::vector<int>& best, Test test) {
  for (int it = 0; it < 60 && hi - lo > kRelativeTolerance * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    BoundTest t = test(mid);
    if (t.split.empty()) {
      lo = std::max(mid, std::min(t.next, hi));
    } else {
      hi = t.bottleneck;
      best = std::move(t.split);
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
  // the greedy optimum is then checked, and if need be improved, with the exact test, unless
  // every stage holds each single layer within the bound (single_layers_within).
  BoundTest first = greedy_at(hi);
  if (first.split.empty()) first = exact_at(hi);
  if (first.split.empty()) return {};
  hi = first.bottleneck;
  std::vector<int> best = std::move(first.split);
  bisect(0.0, hi, best, greedy_at);
  const double below = hi * (1 - 2 * kRelativeTolerance);
  if (single_layers_within(layers, stages, cost, fits, below)) return best;
  BoundTest better = exact_at(below);
  if (!better.split.empty()) {
    double top = better.bottleneck;
    bisect(0.0, top, better.split, exact_at);
    best = std::move(better.split);
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

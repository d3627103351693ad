// File: partition_grouped.cpp
// Layer partition for schedules that run several stages on one device group (interleaved 1F1B,
// wave): bounds each group's summed stage cost and evens out its chunks.
#include <algorithm>
#include <vector>

#include "whale/plan/search_partition.h"

namespace whale::plan {
namespace {

// Bisection stops at this relative precision of the bound (as partition_layers does).
constexpr double kRelativeTolerance = 1e-6;

struct GroupCounts {
  std::vector<int> chunks;    // per group: its stages
  std::vector<int> index;     // per stage: which of its group's stages it is (0-based)
};

GroupCounts count_chunks(const std::vector<int>& group_of) {
  GroupCounts c;
  const int groups = group_of.empty() ? 0 : *std::max_element(group_of.begin(), group_of.end()) + 1;
  c.chunks.assign(groups, 0);
  for (int g : group_of) c.index.push_back(c.chunks[g]++);
  return c;
}

// Greedy at group bound T: stage s, the c-th of its group's v stages, takes the longest range
// that fits and keeps the group's running sum within T (c + 1) / v (within T for the last), or
// one layer when even that exceeds the share but stays within T; every later stage keeps at
// least one layer. Empty when infeasible.
std::vector<int> greedy(int layers, const std::vector<int>& group_of, const GroupCounts& gc,
                        const RangeCost& cost, const RangeFits& fits, double bound, double* largest) {
  const int stages = static_cast<int>(group_of.size());
  std::vector<double> used(gc.chunks.size(), 0.0);
  std::vector<int> b(1, 0);
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    const int g = group_of[s];
    const double cap = bound * (gc.index[s] + 1) / gc.chunks[g];
    auto within = [&](int e, double limit) { return fits(s, first, e) && used[g] + cost(s, first, e) <= limit; };
    int end = first;
    if (s == stages - 1) {
      end = layers;
      if (!within(end, bound)) return {};
    } else {
      const int last_end = layers - (stages - 1 - s);
      if (!within(first + 1, cap)) {
        if (!within(first + 1, bound)) return {};
        end = first + 1;
      } else {
        int lo = first + 1, hi = last_end;  // lo: within the share; hi: the upper candidate
        if (within(hi, cap)) {
          lo = hi;
        } else {
          while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            (within(mid, cap) ? lo : hi) = mid;
          }
        }
        end = lo;
      }
    }
    used[g] += cost(s, first, end);
    b.push_back(end);
    first = end;
  }
  *largest = *std::max_element(used.begin(), used.end());
  return b;
}

}  // namespace

std::vector<int> partition_layers_grouped(int layers, const std::vector<int>& group_of,
                                          const RangeCost& cost, const RangeFits& fits,
                                          double lower, double upper) {
  const int stages = static_cast<int>(group_of.size());
  if (stages < 1 || stages > layers) return {};
  const GroupCounts gc = count_chunks(group_of);
  double hi = 0;
  std::vector<int> best = greedy(layers, group_of, gc, cost, fits, upper, &hi);
  if (best.empty()) return {};
  // Bisection between lo (infeasible, or the lower bound) and hi, the largest group sum of the
  // best split found so far (at most the bound it was found at: a jump to the next real value).
  double lo = lower;
  for (int it = 0; it < 60 && hi - lo > kRelativeTolerance * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    double largest = 0;
    std::vector<int> b = greedy(layers, group_of, gc, cost, fits, mid, &largest);
    if (b.empty()) {
      lo = mid;
    } else {
      hi = largest;
      best = std::move(b);
    }
  }
  return best;
}

}  // namespace whale::plan

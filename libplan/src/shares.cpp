// File: shares.cpp
// Integer per-replica shares of a micro-batch: proportional to speed, rounded so that the
// slowest replica is as fast as it can be (Whale's intra-TaskGraph balancing), or even.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>

#include "whale/plan/search_partition.h"

namespace whale::plan {
namespace {

// Relative slack on share / speed comparisons, so that exact quotas are not lost to rounding.
constexpr double kEps = 1e-9;

// max(1, floor(t * speed)): the share a replica of `speed` can take within time t.
long share_within(double t, double speed) {
  return std::max(1L, static_cast<long>(std::floor(t * speed * (1 + kEps))));
}

}  // namespace

std::vector<int> proportional_shares(int total, const std::vector<double>& speeds) {
  const int n = static_cast<int>(speeds.size());
  // A replica whose forward takes no time (a listed layer without compute) has no speed to
  // weigh the others by.
  if (!std::all_of(speeds.begin(), speeds.end(), [](double s) { return s > 0 && std::isfinite(s); }))
    return even_shares(total, n);
  // Replicas of equal speed take equal shares (+-1): work per distinct speed.
  std::map<double, int> count_of;
  for (double s : speeds) count_of[s]++;
  auto given_within = [&](double t) {
    long sum = 0;
    for (const auto& [speed, count] : count_of) sum += count * share_within(t, speed);
    return sum;
  };
  // The least time t at which the replicas can take `total`: one of the thresholds k / speed.
  // Start from the exact quota time (below it only the floor of 1 could supply enough, and
  // that surplus is taken back below) and step to the next threshold until enough fit.
  const double sum = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  double t = total / sum;
  if (given_within(0) >= total) t = 0;
  while (given_within(t) < total) {
    double next = std::numeric_limits<double>::infinity();
    for (const auto& e : count_of) {
      next = std::min(next, static_cast<double>(share_within(t, e.first) + 1) / e.first);
    }
    t = next;
  }
  std::vector<int> shares(n);
  long given = 0;
  for (int r = 0; r < n; ++r) given += shares[r] = static_cast<int>(share_within(t, speeds[r]));
  // Take the surplus back one sample at a time from the replica with the largest share /
  // speed, never below 1; on ties from the one furthest above its exact quota, then the later
  // one. As every share is at least its value at the optimum, this ends at the least possible
  // largest share / speed, as close to the quotas as that allows.
  using Entry = std::tuple<double, double, int>;  // (share / speed, share - quota, replica)
  auto entry = [&](int r) { return Entry{shares[r] / speeds[r], shares[r] - total * speeds[r] / sum, r}; };
  std::priority_queue<Entry> slowest;
  for (int r = 0; r < n; ++r) {
    if (shares[r] > 1) slowest.push(entry(r));
  }
  while (given > total && !slowest.empty()) {
    const int r = std::get<2>(slowest.top());
    slowest.pop();
    shares[r]--;
    given--;
    if (shares[r] > 1) slowest.push(entry(r));
  }
  return shares;
}

std::vector<int> even_shares(int total, int n) {
  std::vector<int> shares(n, total / n);
  for (int r = 0; r < total % n; ++r) shares[r]++;
  return shares;
}

}  // namespace whale::plan

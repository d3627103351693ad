// File: shares.cpp
// Integer per-replica shares of a micro-batch: proportional to speed (largest remainder) or even.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "whale/plan/search_partition.h"

namespace whale::plan {

std::vector<int> proportional_shares(int total, const std::vector<double>& speeds) {
  const int n = static_cast<int>(speeds.size());
  const double sum = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  std::vector<int> shares(n);
  std::vector<double> remainder(n);
  int given = 0;
  for (int r = 0; r < n; ++r) {
    const double quota = total * speeds[r] / sum;
    shares[r] = static_cast<int>(std::floor(quota + 1e-9));
    remainder[r] = quota - shares[r];
    given += shares[r];
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return remainder[a] > remainder[b] + 1e-12; });
  for (int i = 0; given < total; ++i, ++given) shares[order[i % n]]++;
  for (int r = 0; r < n; ++r) {
    if (shares[r] > 0) continue;
    const int richest = static_cast<int>(std::max_element(shares.begin(), shares.end()) - shares.begin());
    shares[richest]--;
    shares[r] = 1;
  }
  return shares;
}

std::vector<int> even_shares(int total, int n) {
  std::vector<int> shares(n, total / n);
  for (int r = 0; r < total % n; ++r) shares[r]++;
  return shares;
}

}  // namespace whale::plan

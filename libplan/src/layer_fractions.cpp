// File: layer_fractions.cpp
// LayerFractions and least_fraction_sum (layer_fractions.h).
#include "whale/plan/layer_fractions.h"

#include <algorithm>
#include <array>
#include <limits>

namespace whale::plan {

LayerFractions::LayerFractions(std::vector<double> of_layer) : of_layer_(std::move(of_layer)) {
  const int n = static_cast<int>(of_layer_.size());
  for (int l = 0; l < n; ++l) {
    if (l + 1 == n || of_layer_[l + 1] != of_layer_[l]) runs_.push_back({l + 1, of_layer_[l]});
  }
}

double least_fraction_sum(const std::vector<const LayerFractions*>& rows) {
  const int layers = static_cast<int>(rows.front()->of_layer().size());
  // Each row's current run; a bounded array keeps the bounds' hot path free of allocation.
  constexpr std::size_t kMostRows = 64;
  double sum = 0;
  if (rows.size() > kMostRows) {
    for (int l = 0; l < layers; ++l) {
      double least = std::numeric_limits<double>::infinity();
      for (const LayerFractions* r : rows) least = std::min(least, r->of_layer()[l]);
      sum += least;
    }
    return std::min(1.0, sum);
  }
  std::array<std::size_t, kMostRows> at{};
  for (int l = 0; l < layers;) {
    int end = layers;
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::vector<std::pair<int, double>>& runs = rows[r]->runs();
      while (runs[at[r]].first <= l) ++at[r];
      end = std::min(end, runs[at[r]].first);
      least = std::min(least, runs[at[r]].second);
    }
    sum += (end - l) * least;
    l = end;
  }
  return std::min(1.0, sum);
}

}  // namespace whale::plan

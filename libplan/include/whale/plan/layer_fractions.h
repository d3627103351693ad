// File: layer_fractions.h
// A row of per-layer fractions of a whole-model time, kept with its runs of equal neighbouring
// values, and the least-fraction sum over rows that the planner's throughput bounds take: a
// model's alike blocks make one run, so the sum goes run by run instead of layer by layer.
#pragma once

#include <utility>
#include <vector>

namespace whale::plan {

class LayerFractions {
 public:
  LayerFractions() = default;
  explicit LayerFractions(std::vector<double> of_layer);
  const std::vector<double>& of_layer() const { return of_layer_; }
  bool empty() const { return of_layer_.empty(); }
  /// (end layer, fraction) of each run of equal neighbouring fractions, in layer order.
  const std::vector<std::pair<int, double>>& runs() const { return runs_; }

 private:
  std::vector<double> of_layer_;
  std::vector<std::pair<int, double>> runs_;
};

/// The sum over layers of the least fraction any of `rows` (not empty, of one length) gives the
/// layer, at most 1: each stretch of layers where no row changes counts its length times the
/// least fraction there.
double least_fraction_sum(const std::vector<const LayerFractions*>& rows);

}  // namespace whale::plan

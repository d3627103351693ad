// File: test_layer_fractions.cpp
// LayerFractions keeps each run of equal neighbouring fractions; least_fraction_sum takes each
// layer's least fraction over the rows, stretch by stretch, capped at 1, and equals the sum
// taken layer by layer.
#include <doctest/doctest.h>

#include <random>

#include "whale/plan/layer_fractions.h"

using namespace whale::plan;

namespace {

double layer_by_layer(const std::vector<const LayerFractions*>& rows) {
  double sum = 0;
  for (std::size_t l = 0; l < rows.front()->of_layer().size(); ++l) {
    double least = rows.front()->of_layer()[l];
    for (const LayerFractions* r : rows) least = std::min(least, r->of_layer()[l]);
    sum += least;
  }
  return std::min(1.0, sum);
}

}  // namespace

TEST_CASE("a row's runs end where its fraction changes") {
  const LayerFractions row({0.125, 0.25, 0.25, 0.25, 0.125});
  const std::vector<std::pair<int, double>> want = {{1, 0.125}, {4, 0.25}, {5, 0.125}};
  CHECK(row.runs() == want);
  CHECK(LayerFractions({0.5}).runs() == std::vector<std::pair<int, double>>{{1, 0.5}});
  CHECK(LayerFractions().runs().empty());
  CHECK(LayerFractions().empty());
}

TEST_CASE("the least-fraction sum takes each layer's least over the rows, capped at 1") {
  const LayerFractions a({0.125, 0.25, 0.25, 0.25, 0.125});
  const LayerFractions b({0.5, 0.0625, 0.0625, 0.25, 0.125});
  // Layer by layer: 0.125 + 0.0625 + 0.0625 + 0.25 + 0.125.
  CHECK(least_fraction_sum({&a, &b}) == 0.625);
  CHECK(least_fraction_sum({&b, &a}) == 0.625);
  CHECK(least_fraction_sum({&a}) == 1.0);
  const LayerFractions over({0.5, 0.5, 0.5});
  CHECK(least_fraction_sum({&over}) == 1.0);
  // More rows than the run-by-run walk tracks: the same sum, layer by layer.
  std::vector<const LayerFractions*> many(65, &a);
  many.push_back(&b);
  CHECK(least_fraction_sum(many) == 0.625);
}

TEST_CASE("run by run equals layer by layer on rows of repeated fractions") {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> run_length(1, 40), value(1, 1000);
  for (int trial = 0; trial < 200; ++trial) {
    const int layers = 1 + trial % 120;
    std::vector<LayerFractions> rows;
    for (int r = 0; r < 1 + trial % 5; ++r) {
      std::vector<double> f;
      while (static_cast<int>(f.size()) < layers) {
        const double x = value(random) * 1e-5;
        for (int k = run_length(random); k > 0 && static_cast<int>(f.size()) < layers; --k) f.push_back(x);
      }
      rows.emplace_back(std::move(f));
    }
    std::vector<const LayerFractions*> pointers;
    for (const LayerFractions& r : rows) pointers.push_back(&r);
    CAPTURE(trial);
    CHECK(least_fraction_sum(pointers) == doctest::Approx(layer_by_layer(pointers)).epsilon(1e-12));
  }
}

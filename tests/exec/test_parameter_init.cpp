// File: test_parameter_init.cpp
// gpt::initialize_full: each element's value depends on the seed, the tensor's name and its
// index alone, so tensors filled by one thread and by several agree element for element.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "model/gpt_parameters.h"

using namespace whale::exec;

namespace {
std::vector<float> initialized(std::size_t count, const char* name = "layers.0.mlp.fc.weight",
                               int threads = 4) {
  gpt::ParameterSpec spec;
  spec.name = name;
  spec.rows = count;
  spec.init = gpt::Init::normal;
  spec.stddev = 0.02;
  std::vector<float> full(count);
  gpt::initialize_full(spec, 7, full.data(), threads);
  return full;
}
}  // namespace

TEST_CASE("parameter init: a tensor filled in parallel ranges equals its prefixes filled alone") {
  // 3,000,000 elements take up to three threads (ranges split at 1M and 2M); 2,000,000 up to
  // two (split at 1M); 1000 one. Every prefix agrees, across every range border.
  const std::vector<float> big = initialized(3000000), mid = initialized(2000000),
                           small = initialized(1000);
  for (std::size_t e = 0; e < small.size(); ++e) REQUIRE(big[e] == small[e]);
  for (std::size_t e = 0; e < mid.size(); ++e) REQUIRE(big[e] == mid[e]);
  // N(0, 0.02^2): the mean near 0 and the standard deviation near 0.02 over 3M draws
  double sum = 0, squares = 0;
  for (float x : big) {
    sum += x;
    squares += static_cast<double>(x) * x;
  }
  const double mean = sum / big.size();
  CHECK(std::abs(mean) < 1e-4);
  CHECK(std::sqrt(squares / big.size() - mean * mean) == doctest::Approx(0.02).epsilon(0.01));
  // one thread fills the same values as three
  const std::vector<float> alone = initialized(3000000, "layers.0.mlp.fc.weight", 1);
  for (std::size_t e = 0; e < big.size(); ++e) REQUIRE(alone[e] == big[e]);
  // another name, another stream
  CHECK(initialized(1000, "layers.1.mlp.fc.weight")[0] != small[0]);
}

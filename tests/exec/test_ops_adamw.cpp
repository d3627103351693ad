// File: test_ops_adamw.cpp
// AdamW over a parameter list: a sliced (ZeRO-1) optimizer updates exactly its elements, and
// two slices together equal the whole; a parameter not trained is left alone.
#include <doctest/doctest.h>

#include <vector>

#include "whale/exec/model/adamw.h"
#include "host_views.h"

using namespace whale::exec;
using whale::exec::test::host_view;
using whale::exec::test::make_cpu_backend;

namespace {
struct TwoParams {
  std::vector<float> a = {1, 2, 3}, ga = {0.5f, -0.5f, 0.25f};
  std::vector<float> b = {4, 5}, gb = {1, -1};
  std::vector<ParameterView> views() {
    return {{"a", host_view(a), host_view(ga), 3, false},
            {"b", host_view(b), host_view(gb), 2, false}};
  }
};
}  // namespace

TEST_CASE("adamw: the first step moves every element by lr against its gradient sign") {
  auto be = make_cpu_backend();
  TwoParams p;
  AdamWConfig config;
  config.learning_rate = 0.1;
  config.eps = 0.0;
  AdamW opt(*be, p.views(), config);
  CHECK(opt.total_count() == 5);
  CHECK(opt.state_count() == 5);
  opt.step();
  CHECK(opt.step_count() == 1);
  // Step 1: m^ = g, v^ = g^2, update = sign(g).
  CHECK(p.a == std::vector<float>{0.9f, 2.1f, 2.9f});
  CHECK(p.b == std::vector<float>{3.9f, 5.1f});
  CHECK(opt.first_moment().as<float>()[3] == doctest::Approx(0.1));  // (1 - 0.9) * 1
  CHECK(opt.second_moment().as<float>()[4] == doctest::Approx(0.05));  // (1 - 0.95) * 1
}

TEST_CASE("adamw: two slices over a parameter boundary equal the whole optimizer") {
  auto be = make_cpu_backend();
  TwoParams whole_p, sliced_p;
  AdamWConfig config;
  config.weight_decay = 0.1;
  AdamW whole(*be, whole_p.views(), config);
  AdamW low(*be, sliced_p.views(), config, 0, 2), high(*be, sliced_p.views(), config, 2, 100);
  CHECK(high.end() == 5);
  CHECK(high.state_count() == 3);
  for (int s = 0; s < 3; ++s) {
    whole.step();
    low.step();
    CHECK(sliced_p.a[2] == (s == 0 ? 3.0f : sliced_p.a[2]));  // untouched by `low`
    high.step();
  }
  CHECK(sliced_p.a == whole_p.a);
  CHECK(sliced_p.b == whole_p.b);
}

TEST_CASE("adamw: a parameter not trained keeps its value, whatever its gradient and the decay") {
  auto be = make_cpu_backend();
  TwoParams p;
  std::vector<ParameterView> views = p.views();
  views[1].trained = false;  // b: state such as a sigmoid_bias router's expert bias
  AdamWConfig config;
  config.learning_rate = 0.1;
  config.eps = 0.0;
  config.weight_decay = 0.5;
  AdamW opt(*be, views, config);
  opt.step();
  CHECK(p.b == std::vector<float>{4, 5});
  // a: sign(g) and the decay: 1 - 0.1 * (1 + 0.5 * 1) = 0.85, ...
  CHECK(p.a[0] == doctest::Approx(0.85));
  CHECK(p.a[1] == doctest::Approx(2 + 0.1 * (1 - 0.5 * 2)));
}

// File: test_ops_sgd.cpp
// SGD with momentum (sgd.h) with exact numbers: two steps over a slice that straddles a
// parameter boundary worked out by hand (dyadic values, exact in fp32), plain SGD without
// momentum, a parameter not trained, and make_optimizer's choice by training.optimizer.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "whale/exec/model/optimizer.h"
#include "host_views.h"
#include "sliced_params.h"

using namespace whale::exec;
using whale::exec::test::make_cpu_backend;
using Params = whale::exec::test::SlicedParams;

namespace {
SgdConfig dyadic_config() {
  SgdConfig c;
  c.learning_rate = 0.5;
  c.momentum = 0.5;
  c.weight_decay = 0.25;
  return c;
}
}  // namespace

TEST_CASE("sgd slice [2, 4): two steps give the hand-computed values and touch nothing else") {
  auto be = make_cpu_backend();
  Params sliced, full;
  const SgdConfig c = dyadic_config();
  Sgd shard(*be, sliced.views(), c, 2, 4);
  Sgd whole(*be, full.views(), c);
  REQUIRE(shard.state_count() == 2);
  REQUIRE(shard.state().size() == 1);
  // Step 1: d = g + 0.25 p, buffer = d, p1 = p - 0.5 d.
  shard.step();
  whole.step();
  CHECK(sliced.a == std::vector<float>{1, 2, -3.75f});     // a2: d = 0.5 - 1 = -0.5
  CHECK(sliced.b == std::vector<float>{7.125f, 0.5f});     // b0: d = -0.25 + 2 = 1.75
  CHECK(full.a == std::vector<float>{-0.125f, 2.25f, -3.75f});  // a0: d 2.25; a1: d -0.5
  CHECK(full.b == std::vector<float>{7.125f, -1.5625f});         // b1: d = 4 + 0.125
  CHECK(shard.momentum_buffer().as<float>()[0] == -0.5f);
  CHECK(shard.momentum_buffer().as<float>()[1] == 1.75f);
  // Step 2, the same gradients: d2 = g + 0.25 p1, buffer = 0.5 buffer + d2, p2 = p1 - 0.5 buffer.
  // a2: d2 = 0.5 - 0.9375 = -0.4375, buffer -0.6875, p2 = -3.40625;
  // b0: d2 = -0.25 + 1.78125 = 1.53125, buffer 2.40625, p2 = 5.921875.
  shard.step();
  whole.step();
  CHECK(sliced.a == std::vector<float>{1, 2, -3.40625f});
  CHECK(sliced.b == std::vector<float>{5.921875f, 0.5f});
  CHECK(full.a[2] == -3.40625f);
  CHECK(full.b[0] == 5.921875f);
  CHECK(shard.step_count() == 2);
  CHECK(shard.momentum_buffer().as<float>()[0] == -0.6875f);
  CHECK(shard.momentum_buffer().as<float>()[1] == 2.40625f);
}

TEST_CASE("sgd without momentum or decay: p -= lr g at every step") {
  auto be = make_cpu_backend();
  Params p;
  SgdConfig c;
  c.learning_rate = 0.25;
  c.momentum = 0;
  Sgd opt(*be, p.views(), c);
  opt.step();
  opt.step();
  CHECK(p.a == std::vector<float>{0, 2.5f, -4.25f});
  CHECK(p.b == std::vector<float>{8.125f, -1.5f});
}

TEST_CASE("sgd: a parameter not trained keeps its value, whatever its gradient and the decay") {
  auto be = make_cpu_backend();
  Params p;
  std::vector<ParameterView> views = p.views();
  views[0].trained = false;
  Sgd opt(*be, views, dyadic_config());
  opt.step();
  CHECK(p.a == std::vector<float>{1, 2, -4});
  CHECK(p.b == std::vector<float>{7.125f, -1.5625f});
}

TEST_CASE("make_optimizer: training.optimizer picks AdamW (adamw, adam) or SGD (sgd)") {
  CHECK(optimizer_kind("adamw") == OptimizerConfig::Kind::adamw);
  CHECK(optimizer_kind("adam") == OptimizerConfig::Kind::adamw);
  CHECK(optimizer_kind("sgd") == OptimizerConfig::Kind::sgd);
  CHECK_THROWS_AS(optimizer_kind("lion"), std::invalid_argument);
  auto be = make_cpu_backend();
  Params p;
  OptimizerConfig config;
  config.kind = OptimizerConfig::Kind::sgd;
  config.sgd = dyadic_config();
  const auto sgd = make_optimizer(*be, p.views(), config, 2, 4);
  CHECK(sgd->state().size() == 1);  // the momentum buffer
  CHECK(sgd->state_count() == 2);
  config.kind = OptimizerConfig::Kind::adamw;
  const auto adamw = make_optimizer(*be, p.views(), config);
  CHECK(adamw->state().size() == 2);  // m and v
  CHECK(adamw->state_count() == 5);
  sgd->step();
  CHECK(p.a[2] == -3.75f);  // the SGD step of the dyadic case above
}

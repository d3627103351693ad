// File: test_learning_rate_schedule.cpp
// The learning rate of each update (Megatron-LM's get_lr), by hand: warm-up from 0, linear and
// cosine decay to the minimum, the minimum past the decay; an optimizer takes the rate of the
// updates it has made; weight decay leaves biases and norm weights (not `decayed`) alone;
// whale-run's options checked.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/run_learning_rate.h"
#include "sliced_params.h"
#include "whale/exec/model/optimizer.h"
#include "whale/plan/error.h"

using namespace whale::exec;
using whale::exec::test::make_cpu_backend;
using Params = whale::exec::test::SlicedParams;

TEST_CASE("learning rate: warm-up from 0, then linear or cosine decay to the minimum") {
  LearningRateSchedule s(0.8);
  CHECK(s.at(0) == 0.8);  // constant
  CHECK(s.at(1000) == 0.8);
  s.warmup_steps = 4;
  s.decay_steps = 12;
  s.min = 0.2;
  CHECK(s.at(0) == 0.0);  // the first update of a warmed-up run, as Megatron-LM's
  CHECK(s.at(1) == 0.2);
  CHECK(s.at(3) == doctest::Approx(0.6));
  CHECK(s.at(4) == 0.8);
  CHECK(s.at(9) == 0.8);  // constant after the warm-up
  s.decay = LearningRateSchedule::Decay::linear;
  CHECK(s.at(4) == 0.8);
  CHECK(s.at(6) == doctest::Approx(0.65));  // r = 2/8: 0.2 + 0.75 x 0.6
  CHECK(s.at(12) == doctest::Approx(0.2));
  CHECK(s.at(13) == 0.2);
  s.decay = LearningRateSchedule::Decay::cosine;
  CHECK(s.at(8) == doctest::Approx(0.5));  // r = 1/2: 0.2 + 0.5 x 0.6
  CHECK(s.at(6) == doctest::Approx(0.2 + 0.6 * (1 + std::sqrt(0.5)) / 2));  // r = 1/4
  CHECK(s.at(12) == doctest::Approx(0.2));
}

TEST_CASE("an optimizer steps at the rate of the updates made before, a restored count included") {
  auto be = make_cpu_backend();
  Params p;
  SgdConfig c;
  c.momentum = 0;
  c.learning_rate = LearningRateSchedule(0.5);
  c.learning_rate.warmup_steps = 2;
  Sgd opt(*be, p.views(), c);
  opt.step();  // rate 0
  CHECK(p.a == std::vector<float>{1, 2, -4});
  opt.step();  // rate 0.25
  CHECK(p.a == std::vector<float>{0.5f, 2.25f, -4.125f});
  opt.set_step_count(5);  // as a checkpoint restores it
  opt.step();  // rate 0.5
  CHECK(p.a == std::vector<float>{-0.5f, 2.75f, -4.375f});
}

TEST_CASE("weight decay leaves the parameters not `decayed` (biases, norm weights) alone") {
  auto be = make_cpu_backend();
  for (OptimizerConfig::Kind kind : {OptimizerConfig::Kind::adamw, OptimizerConfig::Kind::sgd}) {
    Params decayed, plain;
    for (float& g : decayed.ga) g = 0;
    for (float& g : decayed.gb) g = 0;
    plain.ga = decayed.ga;
    plain.gb = decayed.gb;
    std::vector<ParameterView> views = decayed.views();
    views[1].decayed = false;  // b
    OptimizerConfig config;
    config.kind = kind;
    config.adamw.learning_rate = config.sgd.learning_rate = 0.5;
    config.adamw.weight_decay = config.sgd.weight_decay = 0.25;
    config.adamw.eps = 1;  // zero gradients: AdamW's moment term is 0 / (0 + 1)
    config.sgd.momentum = 0;
    make_optimizer(*be, views, config)->step();
    // a decays by lr x wd = 1/8 of itself under both (SGD: gradient 0 + 0.25 a); b keeps its values.
    CHECK(decayed.a == std::vector<float>{0.875f, 1.75f, -3.5f});
    CHECK(decayed.b == plain.b);
  }
}

TEST_CASE("whale-run's schedule options: the decay ends at --steps unless given; bad ones named") {
  RunOptions o;
  o.steps = 20;
  o.learning_rate = 0.1;
  o.warmup_steps = 5;
  o.lr_decay_style = "cosine";
  const LearningRateSchedule s = learning_rate_schedule(o);
  CHECK(s.decay == LearningRateSchedule::Decay::cosine);
  CHECK(s.decay_steps == 20);
  CHECK(s.peak == 0.1);
  o.lr_decay_steps = 5;
  CHECK_THROWS_WITH_AS(learning_rate_schedule(o), doctest::Contains("--lr-decay-steps"), whale::Error);
  o.lr_decay_steps = 0;
  o.min_learning_rate = 0.2;
  CHECK_THROWS_WITH_AS(learning_rate_schedule(o), doctest::Contains("--min-lr"), whale::Error);
  o.min_learning_rate = 0;
  o.lr_decay_style = "step";
  CHECK_THROWS_WITH_AS(learning_rate_schedule(o), doctest::Contains("--lr-decay-style"), whale::Error);
  o.lr_decay_style = "constant";
  o.warmup_steps = 50;  // a constant rate after a warm-up past the run's end is no error
  CHECK(learning_rate_schedule(o).at(10) == doctest::Approx(0.02));
}

// File: test_gpt_stage.cpp
// The GPT stage on one rank: whole-model gradient check against finite differences, two
// chained stages equal one stage, recomputation (none, full, selective) changes nothing,
// micro-batches accumulate, a split backward (zb-h1) equals the whole one, the initialisation is
// deterministic, bad models are rejected.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stage_fixtures.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/error.h"

using namespace whale;
using namespace whale::exec;
using namespace whale::exec::test;

namespace {

plan::Model tiny_model() {
  plan::Model m;
  m.name = "tiny-test";
  m.family = "gpt";
  m.num_layers = 2;
  m.hidden = 16;
  m.heads = 2;
  m.ffn_hidden = 0;  // 4 * hidden
  m.sequence = 8;
  m.vocabulary = 32;
  return m;
}

}  // namespace

TEST_CASE("whole-model stage: parameter gradients match finite differences") {
  const plan::Model m = tiny_model();
  const int L = m.num_layers;
  auto stage = make_gpt_stage(m, stage_options(0, L + 2), cpu(), nullptr);
  CHECK(stage->input_floats_per_sample() == 0);
  CHECK(stage->output_floats_per_sample() == 0);
  const auto tokens = random_tokens(m, 2, 7);
  const double scale = 1.0 / (2 * m.sequence);
  const double loss = whole_model_step(*stage, tokens, scale);
  // Untrained: the mean loss is near ln V.
  CHECK(loss * scale == doctest::Approx(std::log(32.0)).epsilon(0.02));
  CHECK(gradients_of(*stage).size() == 2 + 12 * L + 3);
  check_directional_gradients(*stage, tokens, scale, 1e-2);
}

TEST_CASE("two chained stages give the same loss and gradients as one stage") {
  const plan::Model m = tiny_model();
  check_chained_stages_equal_whole(m, [&](const StageModuleOptions& o) {
    return make_gpt_stage(m, o, cpu(), nullptr);
  });
}

TEST_CASE("recompute none, full and selective give bit-identical losses and gradients") {
  const plan::Model m = tiny_model();
  check_recompute_modes_agree(m, [&](const StageModuleOptions& o) {
    return make_gpt_stage(m, o, cpu(), nullptr);
  });
}

TEST_CASE("two micro-batches in flight accumulate to the gradient of their union") {
  const plan::Model m = tiny_model();
  const int L = m.num_layers;
  const auto both = random_tokens(m, 2, 17);
  MicroBatchTokens a, b;
  a.samples = b.samples = 1;
  b.first_sample = 1;  // sample 1 of the union: its dropout masks are that sample's
  a.inputs.assign(both.inputs.begin(), both.inputs.begin() + 8);
  a.targets.assign(both.targets.begin(), both.targets.begin() + 8);
  b.inputs.assign(both.inputs.begin() + 8, both.inputs.end());
  b.targets.assign(both.targets.begin() + 8, both.targets.end());

  auto joint = make_gpt_stage(m, stage_options(0, L + 2), cpu(), nullptr);
  const double joint_loss = whole_model_step(*joint, both, 1.0 / 16);
  auto split = make_gpt_stage(m, stage_options(0, L + 2), cpu(), nullptr);
  split->zero_gradients();
  const double loss_a = split->forward(0, a, nullptr, nullptr);
  const double loss_b = split->forward(1, b, nullptr, nullptr);
  split->backward(1, nullptr, nullptr, 1.0 / 16);
  split->backward(0, nullptr, nullptr, 1.0 / 16);
  CHECK(loss_a + loss_b == doctest::Approx(joint_loss).epsilon(1e-6));
  const Gradients gj = gradients_of(*joint), gs = gradients_of(*split);
  for (const auto& entry : gj) {
    const auto& name = entry.first;  // named references: INFO's lambda cannot capture bindings
    const auto& g = entry.second;
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      diff += std::pow(static_cast<double>(gs.at(name)[i]) - g[i], 2);
      norm += static_cast<double>(g[i]) * g[i];
    }
    const auto& tensor = name;  // INFO captures it in a lambda: C++17 cannot capture a binding
    INFO(tensor);
    CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(norm));
  }
  CHECK_THROWS_WITH(split->backward(0, nullptr, nullptr, 1.0),
                    doctest::Contains("micro-batch 0 has no forward in flight"));
}

TEST_CASE("initial parameters depend on seed and name only") {
  const plan::Model m = tiny_model();
  auto whole = make_gpt_stage(m, stage_options(0, 4), cpu(), nullptr);
  auto part = make_gpt_stage(m, stage_options(2, 3), cpu(), nullptr);  // block 1 alone
  auto other_seed_options = stage_options(2, 3);
  other_seed_options.seed = 99;
  auto other = make_gpt_stage(m, other_seed_options, cpu(), nullptr);
  std::map<std::string, ParameterView> by_name;
  for (const ParameterView& v : whole->parameters()) by_name[v.name] = v;
  const auto part_views = part->parameters();
  REQUIRE(part_views.size() == 12);
  CHECK(part_views[2].name == "layers.1.attn.qkv.weight");
  for (std::size_t i = 0; i < part_views.size(); ++i) {
    const ParameterView& v = part_views[i];
    const ParameterView& w = by_name.at(v.name);
    CHECK(floats(v.value) == floats(w.value));
    CHECK(v.tp_replicated == (v.name.find("ln") != std::string::npos ||
                              v.name.find("proj.bias") != std::string::npos ||
                              v.name.find("fc2.bias") != std::string::npos));
  }
  const std::vector<float> qkv = floats(part_views[2].value);
  CHECK(qkv[0] != floats(other->parameters()[2].value)[0]);
  double sum_squares = 0.0;
  for (float x : qkv) sum_squares += x * x;
  CHECK(std::sqrt(sum_squares / qkv.size()) == doctest::Approx(0.02).epsilon(0.1));
  CHECK(floats(part_views[0].value)[0] == 1.0f);  // ln1.weight
  CHECK(floats(part_views[1].value)[0] == 0.0f);  // ln1.bias
}

TEST_CASE("bad models and options are rejected with the field named") {
  plan::Model m = tiny_model();
  m.source_file = "configs/models/x.yaml";
  m.family = "bert";
  CHECK_THROWS_WITH_AS(make_gpt_stage(m, stage_options(0, 4), cpu(), nullptr),
                       doctest::Contains("configs/models/x.yaml: family: a gpt-family model"),
                       Error);
  m = tiny_model();
  m.source_file = "m.yaml";
  m.heads = 3;
  CHECK_THROWS_WITH_AS(make_gpt_stage(m, stage_options(0, 4), cpu(), nullptr),
                       doctest::Contains("m.yaml: heads: a divisor of hidden 16, got 3"), Error);
  m.heads = 2;
  auto options = stage_options(0, 4);
  options.end_layer = 5;
  CHECK_THROWS_WITH_AS(make_gpt_stage(m, options, cpu(), nullptr),
                       doctest::Contains("layers: a stage range within 0..4, got [0, 5)"), Error);
  m.ffn_hidden = 30;
  m.heads = 4;
  m.hidden = 16;
  options = stage_options(0, 4);
  options.tp_size = 4;
  CHECK_THROWS_WITH_AS(make_gpt_stage(m, options, cpu(), nullptr),
                       doctest::Contains("tensor-parallel communicator"),
                       std::invalid_argument);
}

TEST_CASE("a split backward (input pass, then weight pass) equals the whole backward, bit for bit") {
  const plan::Model m = tiny_model();
  const int L = m.num_layers;
  const auto a = random_tokens(m, 2, 5), b = random_tokens(m, 2, 6);
  for (const auto& range : {std::pair<int, int>{0, L + 2}, std::pair<int, int>{1, L + 1}}) {
    const int first = range.first, end = range.second;  // INFO cannot capture a binding
    INFO(first);
    const bool whole_model = first == 0;
    const std::size_t floats_per_micro_batch = 2 * static_cast<std::size_t>(m.sequence) * m.hidden;
    std::vector<float> input(floats_per_micro_batch, 0.25f), output(floats_per_micro_batch);
    std::vector<float> output_grad(floats_per_micro_batch, 0.5f);
    const float* in = whole_model ? nullptr : input.data();
    float* out = whole_model ? nullptr : output.data();
    const float* dout = whole_model ? nullptr : output_grad.data();
    auto whole = make_gpt_stage(m, stage_options(first, end), cpu(), nullptr);
    auto split = make_gpt_stage(m, stage_options(first, end), cpu(), nullptr);
    std::vector<int> reported;
    split->set_layer_done([&](int layer) { reported.push_back(layer); });
    std::vector<float> dx_whole[2], dx_split[2];
    for (auto& dx : dx_whole) dx.assign(floats_per_micro_batch, 0.0f);
    for (auto& dx : dx_split) dx.assign(floats_per_micro_batch, 0.0f);
    for (StageModule* stage : {whole.get(), split.get()}) {
      stage->zero_gradients();
      stage->forward(0, a, in, out);
      stage->forward(1, b, in, out);
    }
    whole->backward(0, dout, whole_model ? nullptr : dx_whole[0].data(), 1.0 / 32);
    whole->backward(1, dout, whole_model ? nullptr : dx_whole[1].data(), 1.0 / 32);
    split->backward_input(0, dout, whole_model ? nullptr : dx_split[0].data(), 1.0 / 32);
    split->backward_input(1, dout, whole_model ? nullptr : dx_split[1].data(), 1.0 / 32);
    CHECK(reported.empty());  // the input pass completes no layer's gradients
    split->backward_weight(0);
    split->backward_weight(1);
    std::vector<int> expected;
    for (int pass = 0; pass < 2; ++pass)
      for (int layer = end - 1; layer >= first; --layer) expected.push_back(layer);
    CHECK(reported == expected);
    CHECK(dx_split[0] == dx_whole[0]);
    CHECK(dx_split[1] == dx_whole[1]);
    const Gradients gw = gradients_of(*whole), gs = gradients_of(*split);
    for (const auto& entry : gw) {
      const auto& tensor = entry.first;  // INFO captures it in a lambda
      INFO(tensor);
      CHECK(gs.at(tensor) == entry.second);
    }
  }
}

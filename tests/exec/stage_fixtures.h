// File: stage_fixtures.h
// Shared by the stage tests (GPT and Llama): the fp32 CPU backend they run on, random token
// micro-batches, stage options, gradients by name, one whole-model step, and the directional
// finite-difference check of a stage's parameter gradients.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "host_views.h"
#include "whale/exec/model/stage_module.h"

namespace whale::exec::test {

/// The fp32 CPU backend every stage of these tests runs on (it outlives them all).
inline Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

inline std::vector<float> floats(ConstTensorView view) { return host_floats(cpu(), view); }

inline MicroBatchTokens random_tokens(const plan::Model& m, int samples, unsigned seed) {
  std::mt19937 rng(seed);
  MicroBatchTokens t;
  t.samples = samples;
  for (int i = 0; i < samples * m.sequence; ++i) {
    t.inputs.push_back(static_cast<int32_t>(rng() % m.vocabulary));
    t.targets.push_back(static_cast<int32_t>(rng() % m.vocabulary));
  }
  return t;
}

inline StageModuleOptions stage_options(int first, int end,
                                        plan::Recompute recompute = plan::Recompute::none) {
  StageModuleOptions o;
  o.first_layer = first;
  o.end_layer = end;
  o.recompute = recompute;
  o.seed = 1234;
  return o;
}

using Gradients = std::map<std::string, std::vector<float>>;

inline Gradients gradients_of(StageModule& stage) {
  Gradients g;
  for (const ParameterView& v : stage.parameters()) g[v.name] = floats(v.gradient);
  return g;
}

/// Loss and gradients of one forward/backward of the whole model on `tokens`.
inline double whole_model_step(StageModule& stage, const MicroBatchTokens& tokens, double scale) {
  stage.zero_gradients();
  const double loss = stage.forward(0, tokens, nullptr, nullptr);
  stage.backward(0, nullptr, nullptr, scale);
  return loss;
}

/// Stages [0, 2) (embedding + block 0) and [2, L + 2) chained through host activations give
/// the loss and the gradients of the whole model bit for bit (2 samples). `make` as below.
template <class Make>
void check_chained_stages_equal_whole(const plan::Model& m, Make make) {
  const auto tokens = random_tokens(m, 2, 11);
  const double scale = 1.0 / 16;
  const int L = m.num_layers;
  const std::size_t per_sample = static_cast<std::size_t>(m.sequence) * m.hidden;
  auto whole = make(stage_options(0, L + 2));
  const double loss = whole_model_step(*whole, tokens, scale);
  auto first = make(stage_options(0, 2));
  auto second = make(stage_options(2, L + 2));
  CHECK(first->output_floats_per_sample() == per_sample);
  CHECK(second->input_floats_per_sample() == per_sample);
  std::vector<float> activation(2 * per_sample), activation_grad(activation.size());
  first->zero_gradients();
  second->zero_gradients();
  CHECK(first->forward(0, tokens, nullptr, activation.data()) == 0.0);
  CHECK(second->forward(0, tokens, activation.data(), nullptr) == loss);
  second->backward(0, nullptr, activation_grad.data(), scale);
  first->backward(0, activation_grad.data(), nullptr, scale);
  Gradients chained = gradients_of(*first);
  for (auto& [name, g] : gradients_of(*second)) chained[name] = g;
  CHECK(chained == gradients_of(*whole));
}

/// Builds the stage of layers [1, L + 2) (a middle and a head stage, covering the input gradient
/// too) with each recomputation mode, runs one micro-batch of 3 samples whose input is
/// sin(0.37 i), and checks that the losses, parameter gradients and input gradients of full and
/// selective recomputation equal those of none bit for bit. `make` builds a stage from options.
template <class Make>
void check_recompute_modes_agree(const plan::Model& m, Make make) {
  const auto tokens = random_tokens(m, 3, 13);
  std::vector<Gradients> grads;
  std::vector<double> losses;
  for (plan::Recompute r :
       {plan::Recompute::none, plan::Recompute::full, plan::Recompute::selective}) {
    auto stage = make(stage_options(1, m.num_layers + 2, r));
    std::vector<float> input(static_cast<std::size_t>(3) * m.sequence * m.hidden),
        input_grad(input.size());
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(std::sin(0.37 * i));
    stage->zero_gradients();
    losses.push_back(stage->forward(0, tokens, input.data(), nullptr));
    stage->backward(0, nullptr, input_grad.data(), 1.0 / 24);
    Gradients g = gradients_of(*stage);
    g["input"] = input_grad;
    grads.push_back(g);
  }
  CHECK(losses[1] == losses[0]);
  CHECK(losses[2] == losses[0]);
  CHECK(grads[1] == grads[0]);
  CHECK(grads[2] == grads[0]);
}

/// For every parameter of a whole-model stage (after whole_model_step with `scale`): the
/// directional derivative of scale * loss along the unit gradient, by central differences,
/// equals the gradient's norm within `tolerance` relative. Returns the largest relative error.
inline double check_directional_gradients(StageModule& stage, const MicroBatchTokens& tokens,
                                          double scale, double tolerance) {
  const Gradients grads = gradients_of(stage);
  double worst = 0.0;
  for (const ParameterView& v : stage.parameters()) {
    const std::vector<float>& g = grads.at(v.name);
    double norm = 0.0;
    for (float x : g) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    REQUIRE(norm > 0.0);
    const std::vector<float> saved = floats(v.value);
    const double eps = 1e-2;
    auto loss_at = [&](double step) {
      std::vector<float> moved(v.count);
      for (std::size_t i = 0; i < v.count; ++i)
        moved[i] = static_cast<float>(saved[i] + step * g[i] / norm);
      cpu().upload(v.value, moved.data(), Stream::compute);
      stage.parameters_updated();
      const double l = stage.forward(0, tokens, nullptr, nullptr) * scale;
      cpu().upload(v.value, saved.data(), Stream::compute);
      stage.parameters_updated();
      return l;
    };
    const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
    const double error = std::abs(numeric - norm) / norm;
    if (error > worst) worst = error;
    INFO(v.name << ": analytic " << norm << ", numeric " << numeric);
    CHECK(error <= tolerance);
  }
  return worst;
}

}  // namespace whale::exec::test

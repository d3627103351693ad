// File: test_cuda_training_step.cpp
// One training step of configs/plans/tiny/single.yaml's model (configs/models/tiny.yaml, the
// whole model on one rank, micro-batch 12) in fp32 on the GPU against the CPU backend: the
// loss, every parameter gradient and every parameter after one AdamW step.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_fixtures.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

using namespace whale;
using namespace whale::exec;
using namespace whale::exec::test;

namespace {

struct StepResult {
  double loss = 0.0;
  std::map<std::string, std::vector<float>> gradients, parameters;
};

std::vector<float> download_floats(Backend& backend, ConstTensorView view) {
  std::vector<float> values(view.count);
  backend.download(values.data(), view, Stream::compute);
  backend.synchronize(Stream::compute);
  return values;
}

/// Forward, backward and one AdamW step of the whole model on `backend`.
StepResult train_step(const plan::Model& model, const MicroBatchTokens& tokens, Backend& backend) {
  StageModuleOptions options;
  options.first_layer = 0;
  options.end_layer = model.num_layers + 2;
  options.seed = 1234;
  auto stage = make_gpt_stage(model, options, backend, nullptr);
  const double scale = 1.0 / (static_cast<double>(tokens.samples) * model.sequence);
  StepResult r;
  stage->zero_gradients();
  r.loss = stage->forward(0, tokens, nullptr, nullptr);
  stage->backward(0, nullptr, nullptr, scale);
  std::vector<Tensor> moments;
  for (const ParameterView& p : stage->parameters()) {
    r.gradients[p.name] = download_floats(backend, p.gradient);
    moments.emplace_back(backend, p.value.count, DType::fp32);
    moments.emplace_back(backend, p.value.count, DType::fp32);
    backend.adamw_update(p.value, p.gradient, moments[moments.size() - 2],
                         moments[moments.size() - 1], p.value.count, 3e-4, 0.9, 0.95, 1e-8, 0.1, 1);
    r.parameters[p.name] = download_floats(backend, p.value);
  }
  return r;
}

}  // namespace

TEST_CASE("one fp32 training step of the tiny model on the GPU equals the CPU's") {
  const plan::Plan plan = plan::load_plan("configs/plans/tiny/single.yaml");
  const plan::Model& model = plan.model;
  MicroBatchTokens tokens;
  tokens.samples = plan.micro_batch_size;
  std::mt19937 rng(7);
  for (int i = 0; i < tokens.samples * model.sequence; ++i) {
    tokens.inputs.push_back(static_cast<int32_t>(rng() % model.vocabulary));
    tokens.targets.push_back(static_cast<int32_t>(rng() % model.vocabulary));
  }
  Backends be;
  const StepResult cpu = train_step(model, tokens, *be.cpu);
  const StepResult gpu = train_step(model, tokens, *be.gpu);
  CHECK(gpu.loss == doctest::Approx(cpu.loss).epsilon(kDeviceFp32Tolerance));
  REQUIRE(gpu.gradients.size() == cpu.gradients.size());
  for (const auto& entry : cpu.gradients) {
    const std::string& name = entry.first;  // not a structured binding: INFO captures it
    const std::vector<float>& grad = entry.second;
    INFO(name);
    CHECK(normwise_error(gpu.gradients.at(name), grad) <= 1e-4);
    // Adam's first step moves each element by about lr times the sign of its gradient, so an
    // element whose gradient is within rounding of zero may move the other way: 2 lr at most.
    const std::vector<float>& gp = gpu.parameters.at(name);
    const std::vector<float>& cp = cpu.parameters.at(name);
    double worst = 0.0;
    for (std::size_t i = 0; i < cp.size(); ++i) worst = std::max(worst, std::fabs(double{gp[i]} - cp[i]));
    CHECK(worst <= 2 * 3e-4);
  }
}

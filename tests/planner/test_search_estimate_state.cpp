// File: test_search_estimate_state.cpp
// The planner's quick estimate holds the same model state per parameter as the simulator's
// memory model (plan::state_bytes_per_param), for every optimizer and precision setting.
#include <doctest/doctest.h>

#include <string>

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"
#include "whale/plan/model_state_bytes.h"
#include "whale/plan/search_estimate.h"

using namespace whale;

TEST_CASE("quick estimate: model state bytes per parameter as the memory model's, SGD included") {
  const std::string root = WHALE_SOURCE_DIR;
  const plan::Cluster cluster = plan::load_cluster(root + "/configs/clusters/a100-64.yaml");
  plan::Model model = plan::load_model(root + "/configs/models/gpt3-1.3b.yaml");
  const int layers = static_cast<int>(model.layers.size());
  const double parameters = model.parameter_count();
  for (const char* optimizer : {"adam", "sgd"}) {
    for (plan::Precision precision : {plan::Precision::fp16, plan::Precision::fp32}) {
      CAPTURE(optimizer);
      model.training.optimizer = optimizer;
      model.training.precision = precision;
      const plan::AnalyticModel analytic(cluster, model);
      const plan::StateBytesPerParam state =
          plan::state_bytes_per_param(precision, optimizer, model.training.framework_precision);
      // One device, tp 1, dp 1, no activations in flight: the state only.
      const plan::MemoryNeed need =
          analytic.memory("a100-sxm4-80gb", 0, layers, 1, 1, 1, 0, plan::Recompute::none, false);
      CHECK(need.state_bytes ==
            doctest::Approx(parameters * (state.weights + state.gradients + state.optimizer)));
    }
  }
  // fp16 SGD: weights 2 + gradients 2 + momentum 4 + master weights 4 = 12 bytes.
  CHECK(plan::state_bytes_per_param(plan::Precision::fp16, "sgd").optimizer == 8);
}

TEST_CASE("quick estimate: an MoE model's experts sharded over the node's ep, their state over expert dp") {
  const std::string root = WHALE_SOURCE_DIR;
  const plan::Cluster cluster = plan::load_cluster(root + "/configs/clusters/a100-64.yaml");  // nodes of 8
  plan::Model model = plan::load_model(root + "/configs/models/hf/mixtral-8x7b-config.json");
  plan::set_sequence(model, 1024, model.training.precision, "--sequence");
  const int layers = static_cast<int>(model.layers.size());
  double experts = 0;
  for (const plan::Layer& l : model.layers) experts += l.expert_parameters;
  const double dense = model.parameter_count() - experts;
  const plan::AnalyticModel analytic(cluster, model);
  const plan::StateBytesPerParam state =
      plan::state_bytes_per_param(model.training.precision, "adamw", model.training.framework_precision);
  // 16 devices at tp 1: ep 8 inside a node (experts / 8 per device), expert dp 2; the dense
  // part whole, its optimizer state sharded over dp 16 and the experts' over expert dp 2.
  const plan::MemoryNeed need =
      analytic.memory("a100-sxm4-80gb", 0, layers, 1, 16, 1, 0, plan::Recompute::none, true);
  const double expected = (dense + experts / 8) * state.weights + dense * (state.gradients + state.optimizer / 16) +
                          experts / 8 * (state.gradients + state.optimizer / 2);
  CHECK(need.state_bytes == doctest::Approx(expected));
}

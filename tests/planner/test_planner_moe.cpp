// File: test_planner_moe.cpp
// The planner on a mixture-of-experts model: every stage of the best plan gets an expert
// layout (ep dividing the experts, ep x expert_tp the devices) whose ep groups lie inside
// nodes, and the plan validates and saves with it.
#include <doctest/doctest.h>

#include <string>

#include "whale/plan/planner.h"
#include "whale/sim/simulator.h"

using namespace whale;

TEST_CASE("planner: Mixtral 8x7B on 64 A100s gets ep groups inside its nodes") {
  const std::string root = WHALE_SOURCE_DIR;
  const plan::Cluster cluster = plan::load_cluster(root + "/configs/clusters/a100-64.yaml");  // 8 nodes of 8
  plan::Model model = plan::load_model(root + "/configs/models/hf/mixtral-8x7b-config.json");
  plan::set_sequence(model, 2048, model.training.precision, "--sequence");
  plan::PlannerOptions options;
  options.global_batch = 128;
  const sim::Simulator simulator;
  const plan::PlanResult result = plan::search_plans(cluster, model, simulator, options);
  const plan::Plan& best = result.best().plan;
  CHECK_NOTHROW(plan::validate_plan(best));
  for (const plan::Stage& stage : best.stages) {
    CAPTURE(stage.first_layer);
    CHECK(stage.ep > 1);  // 8 experts: a node of 8 devices always holds an ep group of 2 or more
    CHECK(8 % stage.ep == 0);
    CHECK(static_cast<int>(stage.devices.size()) % (stage.ep * stage.expert_tp_degree()) == 0);
    for (int d = 0; d < stage.expert_dp(); ++d) {
      for (int t = 0; t < stage.expert_tp_degree(); ++t) {
        const std::vector<int> group = stage.expert_parallel_group(d, t);
        for (int id : group) CHECK(cluster.devices[id].node == cluster.devices[group.front()].node);
      }
    }
  }
  CHECK(plan::plan_to_yaml(best, true).find("ep: ") != std::string::npos);
}

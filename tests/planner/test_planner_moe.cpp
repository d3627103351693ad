// File: test_planner_moe.cpp
// The planner on a mixture-of-experts model: every stage of the best plan gets an expert
// layout (ep dividing the experts, ep x expert_tp the devices) whose ep groups lie inside
// nodes, and the plan validates and saves with it; an ep group that mixes device models gets
// speed-proportional expert counts where the simulator finds them faster.
#include <doctest/doctest.h>

#include <string>

#include "planner_fixtures.h"
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

namespace {

/// The best plan of one stage (max_pipeline_depth 1) for a small MoE Llama whose expert GEMMs
/// dominate (8 experts of width 4096, top 2, hidden 1024), on one node of `devices`.
plan::Plan best_single_stage_plan(const std::string& name, const std::string& devices) {
  const std::string root = WHALE_SOURCE_DIR;
  const plan::Cluster cluster = plan::load_cluster(
      test::temp_file("moe-" + name + ".yaml",
                      "name: " + name + "\nnetwork: {kind: ethernet, bandwidth_gbps: 100, latency_us: 10}\n"
                      "nodes:\n  - {name: n, devices: " + devices + ", intra_link: {kind: pcie, bandwidth_gbps: 256, latency_us: 5}}\n"),
      root + "/profiles");
  const plan::Model model = plan::load_model(test::temp_file(
      "moe-small.yaml",
      "name: moe-small\nfamily: llama\nlayers: 2\nhidden: 1024\nheads: 8\nffn_hidden: 4096\nsequence: 1024\nvocabulary: 1000\n"
      "moe: {experts: 8, top_k: 2, expert_ffn_hidden: 4096}\ntraining: {global_batch: 8, precision: fp16}\n"));
  plan::PlannerOptions options;
  options.hints.max_pipeline_depth = 1;
  options.compare = false;
  const sim::Simulator simulator;
  return plan::search_plans(cluster, model, simulator, options).best().plan;
}

}  // namespace

TEST_CASE("planner: an ep group of an H100 and a V100 gets more experts on the H100") {
  const plan::Plan best = best_single_stage_plan("h100-v100", "[{model: h100-sxm-80gb, count: 1}, {model: v100-sxm2-32gb, count: 1}]");
  REQUIRE(best.stages.size() == 1);
  const plan::Stage& stage = best.stages[0];
  REQUIRE(stage.ep == 2);
  // The H100 (device 0) runs the expert GEMMs several times faster: most of the 8 experts.
  REQUIRE(stage.expert_counts.size() == 2);
  CHECK(stage.expert_counts[0] > stage.expert_counts[1]);
  CHECK(stage.expert_counts[0] + stage.expert_counts[1] == 8);
  CHECK_NOTHROW(plan::validate_plan(best));
  CHECK(plan::plan_to_yaml(best, true).find("expert_counts: [") != std::string::npos);
  // The simulator confirms the choice: the even split of the same plan is slower.
  plan::Plan even = best;
  even.stages[0].expert_counts.clear();
  const sim::Simulator simulator;
  CHECK(simulator.evaluate(best, {}).step_time_s < simulator.evaluate(even, {}).step_time_s);
}

TEST_CASE("planner: an ep group of one device model keeps the even split") {
  const plan::Plan best = best_single_stage_plan("two-h100", "[{model: h100-sxm-80gb, count: 2}]");
  REQUIRE(best.stages.size() == 1);
  CHECK(best.stages[0].ep == 2);
  CHECK(best.stages[0].expert_counts.empty());
}

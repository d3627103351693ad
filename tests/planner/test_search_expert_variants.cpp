// File: test_search_expert_variants.cpp
// The planner's search of expert layouts: the layouts whale-run trains (expert_tp dividing tp
// or a multiple of it), the variants of a plan over the layouts valid on all of its stages, and
// the planner keeping a variant where the simulator finds it faster than its own choice.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "planner_fixtures.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_experts.h"

using namespace whale;
using plan::ExpertLayout;

namespace {

std::vector<std::pair<int, int>> pairs(const std::vector<ExpertLayout>& layouts) {
  std::vector<std::pair<int, int>> out;
  for (const ExpertLayout& l : layouts) out.push_back({l.ep, l.expert_tp});
  return out;
}

std::vector<std::pair<int, int>> stage_layouts(const std::vector<plan::Plan>& plans, std::size_t stage) {
  std::vector<std::pair<int, int>> out;
  for (const plan::Plan& p : plans) out.push_back({p.stages.at(stage).ep, p.stages.at(stage).expert_tp_degree()});
  return out;
}

plan::Plan shipped_plan(const std::string& name) {
  return plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/" + name);
}

}  // namespace

TEST_CASE("runnable expert layouts: expert_tp divides tp or is a multiple of it, and divides the expert FFN") {
  plan::MoeSpec moe;
  moe.experts = 8;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 16;
  // 8 devices at tp 2: expert_tp 1, 2 (divisors), 4, 8 (multiples); ep x expert_tp divides 8.
  using P = std::vector<std::pair<int, int>>;
  CHECK(pairs(plan::runnable_expert_layouts(moe, 8, 2)) ==
        P{{1, 1}, {1, 2}, {2, 1}, {1, 4}, {2, 2}, {4, 1}, {1, 8}, {2, 4}, {4, 2}, {8, 1}});
  // An FFN of 12 columns splits in 1, 2 or 4, not 8.
  moe.expert_ffn_hidden = 12;
  CHECK(pairs(plan::runnable_expert_layouts(moe, 8, 2)) ==
        P{{1, 1}, {1, 2}, {2, 1}, {1, 4}, {2, 2}, {4, 1}, {2, 4}, {4, 2}, {8, 1}});
  // tp 3 on 12 devices: expert_tp 2, 4 and 8 neither divide 3 nor are multiples of it.
  moe.experts = 4;
  CHECK(pairs(plan::runnable_expert_layouts(moe, 12, 3)) == P{{1, 1}, {2, 1}, {4, 1}});
}

TEST_CASE("expert layout variants: every other layout valid on all stages, the nearest first") {
  using P = std::vector<std::pair<int, int>>;
  // tp2-ep2: 4 devices at tp 2, 4 experts, planned ep 2 x expert_tp 2. The others by the
  // distance sum |log2 ep ratio| + |log2 expert_tp ratio|: 1 for ep 2 x 1 and ep 1 x 2 (at equal
  // sharding more ep first), 2 for ep 4 x 1, ep 1 x 4 (the most sharding first) and ep 1 x 1.
  const plan::Plan tp2 = shipped_plan("tiny-moe/tp2-ep2.yaml");
  CHECK(stage_layouts(plan::expert_layout_variants(tp2, 16), 0) == P{{2, 1}, {1, 2}, {4, 1}, {1, 4}, {1, 1}});
  CHECK(stage_layouts(plan::expert_layout_variants(tp2, 3), 0) == P{{2, 1}, {1, 2}, {4, 1}});
  // Two stages, the second on 2 devices only: the layouts of 4 devices are not valid there.
  plan::Plan two = shipped_plan("tiny-moe/ep2-dp2-pp2.yaml");
  two.stages[1].devices = {4, 5};
  two.stages[1].shares = {6, 6};
  const std::vector<plan::Plan> common = plan::expert_layout_variants(two, 16);
  CHECK(stage_layouts(common, 0) == P{{1, 1}, {1, 2}});
  CHECK(stage_layouts(common, 1) == P{{1, 1}, {1, 2}});
  for (const plan::Plan& variant : common) CHECK_NOTHROW(plan::validate_plan(variant));
  // Uneven expert counts: the same ep with even counts is a variant too, and no variant keeps them.
  const plan::Plan uneven = shipped_plan("tiny-moe/ep2-uneven.yaml");
  REQUIRE_FALSE(uneven.stages[0].expert_counts.empty());
  const std::vector<plan::Plan> evened = plan::expert_layout_variants(uneven, 16);
  const P layouts = stage_layouts(evened, 0);
  CHECK(std::find(layouts.begin(), layouts.end(), std::make_pair(uneven.stages[0].ep, uneven.stages[0].expert_tp_degree())) !=
        layouts.end());
  for (const plan::Plan& variant : evened) CHECK(variant.stages[0].expert_counts.empty());
  // A dense plan has none.
  CHECK(plan::expert_layout_variants(shipped_plan("tiny/pp2-1f1b.yaml"), 16).empty());
}

TEST_CASE("expert layout variants keep expert-tp groups inside nodes") {
  // 16 A100s over two nodes of 8 at tp 4: expert_tp 16 would split each expert over both nodes.
  const std::string root = WHALE_SOURCE_DIR;
  const plan::Plan wide = plan::load_plan(test::temp_file(
      "expert-variants-wide.yaml",
      "cluster: " + root + "/configs/clusters/a100-64.yaml\nmodel: " + root + "/configs/models/tiny-moe.yaml\n"
      "precision: fp32\nmicro_batch_size: 4\nmicro_batches: 1\nschedule: 1f1b\nstages:\n"
      "  - {layers: [0, 3], devices: \"0-15\", tp: 4, shares: [1, 1, 1, 1], ep: 2, expert_tp: 8}\n"));
  const std::vector<plan::Plan> variants = plan::expert_layout_variants(wide, 64);
  REQUIRE_FALSE(variants.empty());
  for (const plan::Plan& v : variants) CHECK(v.stages[0].expert_tp_degree() <= 8);
  // ep 1, 2 or 4 (dividing 4 experts) x expert_tp 1, 2, 4 (3 each), 8 (ep 1 or 2; 16 devices),
  // but the planned ep 2 x 8: 10.
  CHECK(variants.size() == 10);
}

TEST_CASE("kind expert layout variants: one device model's stages at a time, the kinds in turn") {
  using P = std::vector<std::pair<int, int>>;
  // Two kinds on cpu-local-8: stage 0 at tp 1 (ep 2 x 1 planned), stage 1 at tp 2 (ep 2 x 2).
  plan::Plan two = shipped_plan("tiny-moe/ep2-dp2-pp2.yaml");
  two.stages[1].tp = 2;
  two.stages[1].shares = {6, 6};
  // Stage 0's others, nearest to ep 2 x 1 first: ep 4 x 1, ep 2 x 2, ep 1 x 1 (distance 1), ep 1
  // x 2 (2), ep 1 x 4 (3); stage 1's, nearest to ep 2 x 2: ep 2 x 1, ep 1 x 2, then ep 4 x 1,
  // ep 1 x 4, ep 1 x 1 (2). Round by round: stage 0's first, stage 1's first, stage 0's second...
  const std::vector<plan::Plan> variants = plan::kind_expert_layout_variants(two, 4);
  CHECK(stage_layouts(variants, 0) == P{{4, 1}, {2, 1}, {2, 2}, {2, 1}});
  CHECK(stage_layouts(variants, 1) == P{{2, 2}, {2, 1}, {2, 2}, {1, 2}});
  for (const plan::Plan& variant : variants) CHECK_NOTHROW(plan::validate_plan(variant));
  CHECK(plan::kind_expert_layout_variants(two, 64).size() == 10);
  // One kind only: none (expert_layout_variants covers it).
  CHECK(plan::kind_expert_layout_variants(shipped_plan("tiny-moe/ep2-dp2-pp2.yaml"), 16).empty());
}

TEST_CASE("planner: a faster expert layout than its own choice is kept, and none of the best's variants beats it") {
  // The tiny MoE (4 experts) at sequence 4096 on 64 A100s (8 nodes of 8), batch 16: the choice
  // by sharding (ep 4 x expert_tp 2 fills a node at tp 4) is slower by the simulator than
  // ep 4 x expert_tp 1, a layout the planner reaches only through its variants.
  const plan::Cluster cluster = test::shipped_cluster("a100-64");
  plan::Model model = test::shipped_model("tiny-moe");
  plan::set_sequence(model, 4096, plan::Precision::bf16, "--sequence");
  model.training.precision = plan::Precision::bf16;
  plan::PlannerOptions options;
  options.global_batch = 16;
  const sim::Simulator simulator;
  const plan::PlanResult result = plan::search_plans(cluster, model, simulator, options);
  const plan::Plan& best = result.best().plan;
  const double best_s = result.best().estimate.step_time_s;
  REQUIRE(best.stages.size() == 1);
  CHECK(best.stages[0].tp == 4);
  CHECK(best.stages[0].ep == 4);
  CHECK(best.stages[0].expert_tp_degree() == 1);
  CHECK(result.best().label.find(" ep4 expert-tp1") != std::string::npos);
  plan::Plan chosen = best;
  chosen.stages[0].expert_tp = 2;
  CHECK(simulator.evaluate(chosen, {}).step_time_s > best_s);
  for (const plan::Plan& variant : plan::expert_layout_variants(best, 64)) {
    CAPTURE(variant.stages[0].ep);
    CAPTURE(variant.stages[0].expert_tp_degree());
    const plan::Estimate e = simulator.evaluate(variant, {});
    CHECK((!e.fits || e.step_time_s >= best_s));
  }
}

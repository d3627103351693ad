// File: test_planner_options.cpp
// Planner options and outputs: determinism, --top alternatives, the time limit returning the
// best plan so far, the layouts spent on a shortfall, the baseline's uniform shape, the upper
// bound's parts, and the JSON keys.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "planner_fixtures.h"

using namespace whale;

TEST_CASE("the same inputs give the same plan, byte for byte") {
  const plan::Cluster cl = test::shipped_cluster("mixed-node");
  const plan::Model m = test::shipped_model("gpt2-124m");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.compare = false;
  const plan::PlanResult a = plan::search_plans(cl, m, simulator, o);
  o.threads = 2;
  const plan::PlanResult b = plan::search_plans(cl, m, simulator, o);
  CHECK(plan::plan_to_yaml(a.best().plan, true) == plan::plan_to_yaml(b.best().plan, true));
  CHECK(plan::describe_plan(a.best().plan) == plan::describe_plan(b.best().plan));
}

TEST_CASE("top k keeps k alternatives ranked by simulated step time") {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.compare = false;
  o.top_k = 3;
  const plan::PlanResult r = plan::search_plans(test::shipped_cluster("cpu-local-4"), test::shipped_model("tiny"), simulator, o);
  REQUIRE(r.ranked.size() == 4);
  for (size_t i = 1; i < r.ranked.size(); ++i) {
    CHECK(r.ranked[i - 1].estimate.step_time_s <= r.ranked[i].estimate.step_time_s);
  }
}

namespace {
// A fake clock for PlannerOptions::clock_s: each reading is 1 s later than the previous one,
// the first reading 0. The planner reads it once at the start (the limit counts from there),
// then before every candidate after the first fitting one and before every simulation after
// the first successful one.
std::function<double()> ticking_clock() {
  auto now = std::make_shared<double>(-1.0);
  return [now] { return *now += 1.0; };
}

plan::PlanResult search_tiny_with_limit(double time_limit_s) {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.compare = false;
  o.time_limit_s = time_limit_s;
  o.clock_s = ticking_clock();
  return plan::search_plans(test::shipped_cluster("cpu-local-4"), test::shipped_model("tiny"), simulator, o);
}
}  // namespace

TEST_CASE("a time limit returns the best plan found so far, independent of the wall clock") {
  // Limit 3.5 s: start at 0; candidate 1 (fits) unchecked; checks at 1, 2, 3 let candidates 2, 3
  // and 4 through; the check at 4 > 3.5 stops the search. The simulator then ranks the best
  // analytic candidate (unchecked) and the check at 5 stops it: one plan, from 4 candidates.
  const plan::PlanResult r = search_tiny_with_limit(3.5);
  CHECK(r.stats.timed_out);
  CHECK(r.stats.candidates_evaluated == 4);
  REQUIRE(r.ranked.size() == 1);
  CHECK(r.best().estimate.fits);
  CHECK_NOTHROW(plan::validate_plan(r.best().plan));
  // The same readings give the same plan, byte for byte; one more second, one more candidate.
  const plan::PlanResult again = search_tiny_with_limit(3.5);
  CHECK(plan::plan_to_yaml(again.best().plan, true) == plan::plan_to_yaml(r.best().plan, true));
  CHECK(search_tiny_with_limit(4.5).stats.candidates_evaluated == 5);
  // Without a limit the whole space is searched.
  const plan::PlanResult all = search_tiny_with_limit(0);
  CHECK_FALSE(all.stats.timed_out);
  CHECK(all.stats.candidates_evaluated > 5);
  CHECK(all.best().estimate.step_time_s <= r.best().estimate.step_time_s);
}

TEST_CASE("where nothing on every device fits, the look for the closest shortfall is bounded, not the search") {
  // GPT-3 1.3B at 49,152 tokens on a100-v100: a 16 GB V100 holds no block of it (its rebuilt
  // layer's attention scores alone take more), so the main search's candidates all overflow
  // and almost all are refused by the memory verdict; the A100s alone plan it.
  plan::Model model = test::shipped_model("gpt3-1.3b");
  plan::set_sequence(model, 49152, model.training.precision, "--sequence");
  const plan::Cluster cluster = test::shipped_cluster("a100-v100");
  const sim::Simulator simulator;
  std::map<long, plan::PlanResult> by_cap;
  for (long cap : {0L, 1L, 16L}) {
    plan::PlannerOptions o;
    o.global_batch = 64;
    o.shortfall_layouts = cap;
    by_cap[cap] = plan::search_plans(cluster, model, simulator, o);
  }
  // The refused candidates laid out are the cap's, one by one: 15 more at 16 than at 1, all of
  // them (thousands) without a cap; the plan is the same.
  CHECK(by_cap[16].stats.candidates_evaluated - by_cap[1].stats.candidates_evaluated == 15);
  CHECK(by_cap[0].stats.candidates_evaluated > 1000 + by_cap[16].stats.candidates_evaluated);
  for (long cap : {1L, 16L}) {
    CHECK(by_cap[cap].best().label == by_cap[0].best().label);
    CHECK(by_cap[cap].best().estimate.step_time_s == by_cap[0].best().estimate.step_time_s);
    CHECK(by_cap[cap].stats.structures_pruned + by_cap[cap].stats.structures ==
          by_cap[0].stats.structures_pruned + by_cap[0].stats.structures);
  }
}

TEST_CASE("the baseline is uniform with even layers and shares; the upper bound sums the models") {
  const plan::Cluster cl = test::shipped_cluster("a100-v100");
  const plan::Model m = test::shipped_model("gpt3-1.3b");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  const plan::PlanResult r = plan::search_plans(cl, m, simulator, o);
  REQUIRE(r.baseline_found);
  const plan::Plan& base = r.baseline.plan;
  for (const plan::Stage& s : base.stages) {
    CHECK(s.tp == base.stages[0].tp);
    CHECK(s.dp() == base.stages[0].dp());
    for (int share : s.shares) CHECK(share == s.shares[0]);
    CHECK(s.recompute == base.stages[0].recompute);
  }
  CHECK(base.schedule.kind == plan::ScheduleKind::one_f_one_b);
  REQUIRE(r.upper_bound.per_model.size() == 2);
  CHECK(r.upper_bound.samples_per_s ==
        doctest::Approx(r.upper_bound.per_model[0].second + r.upper_bound.per_model[1].second));
  CHECK(r.speedup_vs_baseline == doctest::Approx(r.best().estimate.samples_per_s / r.baseline.estimate.samples_per_s));
  const std::string json = plan::format_planner_json(r);
  for (const char* key : {"\"best\"", "\"step_time_s\"", "\"samples_per_s\"", "\"tokens_per_s\"", "\"baseline\"",
                          "\"upper_bound\"", "\"speedup_vs_baseline\"", "\"fraction_of_upper_bound\"",
                          "\"device_models\": [\"a100-sxm4-40gb\", \"v100-sxm2-16gb\"]", "\"candidates_evaluated\"",
                          "\"wall_s\""}) {
    CHECK(json.find(key) != std::string::npos);
  }
}

TEST_CASE("a missing baseline says why: no uniform layout divides the batch, or none fits in memory") {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  bool found = true;
  std::string missing;
  // 64 devices, 4 blocks: a uniform pipeline of 1, 2 or 4 stages has dp 16 at least at tp 1
  // and 2 at tp 8 (the experts' heads allow tp 1, 2, 4), and no multiple of it divides 12.
  o.global_batch = 12;
  plan::search_baseline(test::shipped_cluster("a100-v100"), test::shipped_model("tiny-moe-dropless"), simulator, o,
                        &found, &missing);
  CHECK_FALSE(found);
  CHECK(missing == "none divides the global batch of 12 samples into micro-batches of a multiple of its "
                   "data-parallel degree");
  // GPT-3 175B on 16 GB V100s and T4s: uniform layouts exist, none fits.
  o.global_batch = 64;
  plan::search_baseline(test::shipped_cluster("v100-t4"), test::shipped_model("gpt3-175b"), simulator, o, &found,
                        &missing);
  CHECK_FALSE(found);
  CHECK(missing == "none fits in memory");
}

TEST_CASE("the JSON output gives a missing baseline's reason") {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  // As above, no uniform pipeline's dp divides it; 20 samples (not 12) feed every device, so
  // the plan and its comparison are of all 64.
  o.global_batch = 20;
  const plan::PlanResult r =
      plan::search_plans(test::shipped_cluster("a100-v100"), test::shipped_model("tiny-moe-dropless"), simulator, o);
  REQUIRE_FALSE(r.baseline_found);
  CHECK(plan::format_planner_json(r).find("\"found\": false, \"reason\": \"none divides the global batch of 20 samples") !=
        std::string::npos);
  CHECK(plan::format_planner_text(r).find("baseline: no uniform plan on devices 0-63: none divides") != std::string::npos);
}

namespace {
// A fake clock that reads 0 for its first `zero_readings` readings and 1e9 s after, counting
// every reading in `*readings`.
std::function<double()> clock_jumping_after(long zero_readings, std::shared_ptr<long> readings) {
  return [=] { return (*readings)++ < zero_readings ? 0.0 : 1e9; };
}

// GPT-2 124M at batch 32 in one pipeline stage on four A100s and four V100s (kTwoNodeMix): its
// group mixes the two models, so the best plan has mixed-tp variants.
plan::PlanResult search_one_stage_mix(long zero_readings, std::shared_ptr<long> readings) {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.compare = false;
  o.global_batch = 32;
  o.hints.max_pipeline_depth = 1;
  o.time_limit_s = 1.0;
  o.clock_s = clock_jumping_after(zero_readings, std::move(readings));
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("options_two_node_mix.yaml", test::kTwoNodeMix));
  return plan::search_plans(cluster, test::shipped_model("gpt2-124m"), simulator, o);
}
}  // namespace

TEST_CASE("the time limit also cuts the mixed-tp variants, after the search") {
  auto readings = std::make_shared<long>(0);
  const plan::PlanResult full = search_one_stage_mix(1L << 40, readings);
  const long all = *readings;
  CHECK_FALSE(full.stats.timed_out);
  REQUIRE(plan::mixed_tp_variants(full.ranked.front().plan, 16).size() >= 2);  // read the clock before each
  // The last reading (before the last variant) past the limit: the search itself is as
  // without a limit, the pass over the variants says it was cut.
  const plan::PlanResult cut = search_one_stage_mix(all - 1, std::make_shared<long>(0));
  CHECK(cut.stats.timed_out);
  CHECK(cut.stats.candidates_evaluated == full.stats.candidates_evaluated);
  CHECK(cut.stats.candidates_simulated == full.stats.candidates_simulated);
  CHECK(cut.stats.candidates_bounded == full.stats.candidates_bounded);
  // Every plan it ranks, the full search ranks too.
  for (const plan::RankedPlan& p : cut.ranked) {
    CAPTURE(p.label);
    CHECK(std::any_of(full.ranked.begin(), full.ranked.end(), [&](const plan::RankedPlan& q) {
      return plan::plan_to_yaml(q.plan, true) == plan::plan_to_yaml(p.plan, true);
    }));
  }
  // With every reading within the limit, nothing is cut.
  CHECK_FALSE(search_one_stage_mix(all, std::make_shared<long>(0)).stats.timed_out);
}

// File: test_planner_options.cpp
// Planner options and outputs: determinism, --top alternatives, the time limit returning the
// best plan so far, the baseline's uniform shape, the upper bound's parts, and the JSON keys.
#include <doctest/doctest.h>

#include <functional>
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

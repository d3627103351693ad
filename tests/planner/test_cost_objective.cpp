// File: test_cost_objective.cpp
// The cost objective and the budget on a toy cluster of 2 A100-80GB ($4/h each) and 2
// V100-32GB ($3/h each), gpt2-124m in fp16 at global batch 32: throughput takes all four devices
// ($14/h), cost takes the A100s alone ($8/h), and the budget cap rejects dearer plans (below
// every whole device model, part of one model's devices or parts of both).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "planner_fixtures.h"
#include "whale/plan/error.h"
#include "whale/plan/objective.h"
#include "whale/sim/report.h"

using namespace whale;

namespace {

constexpr const char* kToy = R"(name: toy-priced
nodes:
  - name: a
    devices: [{model: a100-sxm4-80gb, count: 2, price_per_hour_usd: 4}]
    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}
  - name: v
    devices: [{model: v100-sxm2-32gb, count: 2, price_per_hour_usd: 3}]
    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 100, latency_us: 5}
)";

plan::Model toy_model() {
  plan::Model model = test::shipped_model("gpt2-124m");
  model.training.precision = plan::Precision::fp16;
  return model;
}

plan::PlanResult plan_toy(plan::Objective objective, std::optional<double> budget = std::nullopt,
                          const char* cluster_text = kToy) {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("cost_toy.yaml", cluster_text));
  const sim::Simulator simulator;
  plan::PlannerOptions options;
  options.global_batch = 32;
  options.objective = objective;
  options.budget_usd_per_hour = budget;
  return plan::search_plans(cluster, toy_model(), simulator, options);
}

}  // namespace

TEST_CASE("cost picks the cheaper plan per token where throughput picks the faster one") {
  const plan::PlanResult fast = plan_toy(plan::Objective::throughput);
  const plan::PlanResult cheap = plan_toy(plan::Objective::cost);
  CHECK(used_devices(fast.best().plan) == std::set<int>{0, 1, 2, 3});
  CHECK(used_devices(cheap.best().plan) == std::set<int>{0, 1});
  const plan::PlanCost fast_cost = plan::plan_cost(fast.best().plan, fast.best().estimate);
  const plan::PlanCost cheap_cost = plan::plan_cost(cheap.best().plan, cheap.best().estimate);
  CHECK(fast_cost.usd_per_hour == 14.0);
  CHECK(cheap_cost.usd_per_hour == 8.0);
  // By hand: $8/h over (samples/s x 1024 tokens x 3600 s) tokens an hour, per million.
  const double cheap_tokens_per_hour = cheap.best().estimate.samples_per_s * 1024 * 3600;
  CHECK(cheap_cost.usd_per_million_tokens == doctest::Approx(8.0 / (cheap_tokens_per_hour / 1e6)).epsilon(1e-12));
  // The trade: the four-device plan is faster, the A100s alone cheaper per token.
  CHECK(fast.best().estimate.samples_per_s > cheap.best().estimate.samples_per_s);
  CHECK(cheap_cost.usd_per_million_tokens < fast_cost.usd_per_million_tokens);
  // The cost objective's best is the A100s' plan alone of the throughput search's comparison.
  CHECK(cheap.best().estimate.samples_per_s == doctest::Approx(fast.upper_bound.per_model[0].second));
  // Its V100s idle, with the price of using them as the reason; alternatives go by cost.
  REQUIRE(cheap.idle.size() == 1);
  CHECK(cheap.idle[0].devices == std::vector<int>{2, 3});
  CHECK(cheap.idle[0].reason.find("per 1M tokens") != std::string::npos);
  for (std::size_t i = 1; i < cheap.ranked.size(); ++i) {
    const plan::RankedPlan& a = cheap.ranked[i - 1];
    const plan::RankedPlan& b = cheap.ranked[i];
    CHECK_FALSE(plan::ranks_before(plan::Objective::cost, b.plan, b.estimate, a.plan, a.estimate));
  }
  // The reports carry the prices, the baseline's too.
  const std::string text = plan::format_planner_text(cheap);
  CHECK(text.find("objective: cost") != std::string::npos);
  CHECK(text.find("$14/h") != std::string::npos);   // the baseline on all four devices
  CHECK(text.find("best plan is 1.251x faster") != std::string::npos);
  // A best plan slower than the baseline is said to be, with the reason.
  plan::PlanResult slower = cheap;
  slower.speedup_vs_baseline = 0.8;
  CHECK(plan::format_planner_text(slower).find("best plan is 0.800x its speed (slower: ranked by cost per token)") !=
        std::string::npos);
  slower.objective = plan::Objective::throughput;
  CHECK(plan::format_planner_text(slower).find("0.800x its speed (slower: held to the hints or cut by the time limit)") !=
        std::string::npos);
  const std::string json = plan::format_planner_json(cheap);
  CHECK(json.find("\"objective\": \"cost\"") != std::string::npos);
  CHECK(json.find("\"usd_per_hour\": 8,") != std::string::npos);
  CHECK(json.find("\"usd_per_hour\": 14,") != std::string::npos);
}

TEST_CASE("a saved plan carries its cluster's prices into whale-sim's reports") {
  const plan::PlanResult cheap = plan_toy(plan::Objective::cost);
  const std::string path = test::temp_file("cost_toy_plan.yaml", "");
  plan::save_plan(cheap.best().plan, path, /*embed=*/true);
  const plan::Plan loaded = plan::load_plan(path);
  REQUIRE(loaded.cluster.devices.size() == 4);
  CHECK(loaded.cluster.devices[0].price_per_hour_usd == 4.0);
  CHECK(loaded.cluster.devices[3].price_per_hour_usd == 3.0);
  const sim::Simulator simulator;
  const plan::Estimate e = simulator.evaluate(loaded, plan::EvaluateOptions{});
  CHECK(e.samples_per_s == doctest::Approx(cheap.best().estimate.samples_per_s));
  const std::string text = sim::format_text_report(loaded, e);
  CHECK(text.find("USD per hour             8.00  (the devices the plan uses)\n") != std::string::npos);
  char per_million[64];
  std::snprintf(per_million, sizeof per_million, "USD per 1M tokens%12.4f\n",
                8.0 * 1e6 / (3600 * e.samples_per_s * 1024));
  CHECK(text.find(per_million) != std::string::npos);
  CHECK(sim::format_json_report(loaded, e).find("\"usd_per_hour\": 8,\n") != std::string::npos);
}

TEST_CASE("the budget rejects plans whose used devices cost more per hour") {
  // $10/h: the four-device plans ($14/h) are out, so even throughput takes the A100s alone.
  const plan::PlanResult capped = plan_toy(plan::Objective::throughput, 10.0);
  CHECK(used_devices(capped.best().plan) == std::set<int>{0, 1});
  for (const plan::RankedPlan& r : capped.ranked) CHECK(plan::plan_cost(r.plan, r.estimate).usd_per_hour <= 10.0);
  REQUIRE(capped.idle.size() == 1);
  CHECK(capped.idle[0].reason.find("above the budget of $10") != std::string::npos);
  // Exactly at a plan's price is within the budget.
  CHECK(used_devices(plan_toy(plan::Objective::throughput, 14.0).best().plan) == std::set<int>{0, 1, 2, 3});
  // Below every plan on whole device models (the V100s alone, $6/h): as many devices of one model
  // as the budget pays for, searched alone; the best by the objective. At $5/h one A100 ($4) or
  // one V100 ($3): throughput takes the A100, cost per token the one that is cheaper per token.
  const plan::PlanResult one = plan_toy(plan::Objective::throughput, 5.0);
  REQUIRE(used_devices(one.best().plan).size() == 1);
  CHECK(*used_devices(one.best().plan).begin() <= 1);   // an A100
  CHECK(plan::plan_cost(one.best().plan, one.best().estimate).usd_per_hour == 4.0);
  std::vector<int> idle;
  for (const plan::IdleDevices& e : one.idle) {
    if (e.reason.find("more devices cost more than the budget of $5 per hour") != std::string::npos)
      idle.insert(idle.end(), e.devices.begin(), e.devices.end());
  }
  std::sort(idle.begin(), idle.end());
  CHECK(idle == std::vector<int>{1, 2, 3});
  const plan::PlanResult cheapest = plan_toy(plan::Objective::cost, 5.0);
  REQUIRE(used_devices(cheapest.best().plan).size() == 1);
  CHECK(plan::plan_cost(cheapest.best().plan, cheapest.best().estimate).usd_per_hour <= 5.0);
  // With three V100s ($9/h together) at $7/h, parts of both models: an A100 ($4) and, with the
  // $3 left, a V100; faster than what one model alone gives for $7 (an A100, or two V100s).
  std::string three_v100s = kToy;
  three_v100s.replace(three_v100s.find("count: 2, price_per_hour_usd: 3"), 8, "count: 3");
  const plan::PlanResult both = plan_toy(plan::Objective::throughput, 7.0, three_v100s.c_str());
  const std::set<int> both_used = used_devices(both.best().plan);
  REQUIRE(both_used.size() == 2);
  CHECK(*both_used.begin() <= 1);    // an A100
  CHECK(*both_used.rbegin() >= 2);   // a V100
  CHECK(plan::plan_cost(both.best().plan, both.best().estimate).usd_per_hour == 7.0);
  // Part of the devices also competes with the plans found on whole device models within the
  // budget: at $7/h the two V100s ($6) are within it, and an A100 with a V100 ($7) is faster.
  const plan::PlanResult part = plan_toy(plan::Objective::throughput, 7.0);
  const std::set<int> part_used = used_devices(part.best().plan);
  REQUIRE(part_used.size() == 2);
  CHECK(*part_used.begin() <= 1);    // an A100
  CHECK(*part_used.rbegin() >= 2);   // a V100
  // Below every device's price: one error naming the cheapest plan found.
  try {
    plan_toy(plan::Objective::cost, 2.0);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "--budget-usd-per-hour: no plan found costs at most $2 per hour (hint: the cheapest plan found (p1 "
          "tp[v100-sxm2-32gb:1], 1 stage(s)) costs $6 per hour: raise the budget to that, or exclude devices with a "
          "hints file (docs/hints.md))");
  }
}

TEST_CASE("the cost objective needs a price on every usable device") {
  std::string unpriced = kToy;
  unpriced.replace(unpriced.find(", price_per_hour_usd: 3"), 23, "");
  try {
    plan_toy(plan::Objective::cost, std::nullopt, unpriced.c_str());
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("cost_toy.yaml: --objective cost needs a price for every usable device: "
                    "device 2 (v100-sxm2-32gb on node v) has no price_per_hour_usd") != std::string::npos);
  }
  // Throughput without a budget needs none and reports no price.
  const plan::PlanResult r = plan_toy(plan::Objective::throughput, std::nullopt, unpriced.c_str());
  CHECK_FALSE(plan::plan_cost(r.best().plan, r.best().estimate).priced);
  CHECK(plan::format_planner_json(r).find("\"usd_per_hour\": null") != std::string::npos);
}

TEST_CASE("under a budget, the devices of nodes taken in part are searched without them too") {
  // a100-v100: 16 A100s at $4.10/h and 48 V100s at $2.03/h, eight to a node. $200/h pays for the
  // A100s and 43 V100s; the 40 V100s of five whole nodes give a plan on 56 devices, faster than
  // on 59 (few pipelines divide 43) and faster than at half the budget.
  const plan::Cluster cluster = test::shipped_cluster("a100-v100");
  const sim::Simulator simulator;
  plan::PlannerOptions options;
  options.global_batch = 512;
  options.budget_usd_per_hour = 200.0;
  const plan::PlanResult at_200 = plan::search_plans(cluster, test::shipped_model("gpt2-124m"), simulator, options);
  const std::set<int> used = used_devices(at_200.best().plan);
  CHECK(used.size() == 56);
  for (int d = 0; d < 16; ++d) CHECK(used.count(d) == 1);
  options.budget_usd_per_hour = 100.0;
  const plan::PlanResult at_100 = plan::search_plans(cluster, test::shipped_model("gpt2-124m"), simulator, options);
  CHECK(at_200.best().estimate.samples_per_s > at_100.best().estimate.samples_per_s);
}

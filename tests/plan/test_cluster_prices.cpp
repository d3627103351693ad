// File: test_cluster_prices.cpp
// Device prices (price_per_hour_usd): parsing, bad prices, the save/load round trip, a plan's
// price and USD per 1M tokens by hand, and the objective's ranking.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/cluster.h"
#include "whale/plan/error.h"
#include "whale/plan/objective.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

namespace {

// Two A100s at $4/h, then a T4 at $1/h and two V100s without a price.
const char* kPriced =
    "name: priced\n"
    "network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 2}\n"
    "nodes:\n"
    "  - name: a\n"
    "    devices: [{model: a100-sxm4-80gb, count: 2, price_per_hour_usd: 4}]\n"
    "    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}\n"
    "  - name: m\n"
    "    devices: [{model: t4, price_per_hour_usd: 1}, {model: v100-sxm2-16gb, count: 2}]\n"
    "    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}\n";

std::string error_of(const std::string& text) {
  try {
    load_cluster(scratch_file("prices_bad.yaml", text));
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "";
}

std::string with(const std::string& from, const std::string& to) {
  std::string text = kPriced;
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// A plan over `stages` (device lists) of `cluster`; only its devices matter to plan_cost.
Plan plan_on(const Cluster& cluster, const std::vector<std::vector<int>>& stages) {
  Plan plan;
  plan.cluster = cluster;
  for (const std::vector<int>& devices : stages) {
    Stage s;
    s.devices = devices;
    plan.stages.push_back(s);
  }
  return plan;
}

Estimate at_tokens_per_s(double tokens_per_s, double step_time_s) {
  Estimate e;
  e.tokens_per_s = tokens_per_s;
  e.step_time_s = step_time_s;
  return e;
}

}  // namespace

TEST_CASE("device entries carry their price per hour; entries without one are unpriced") {
  const Cluster c = load_cluster(scratch_file("prices.yaml", kPriced));
  REQUIRE(c.devices.size() == 5);
  CHECK(c.devices[0].price_per_hour_usd == 4.0);
  CHECK(c.devices[1].price_per_hour_usd == 4.0);
  CHECK(c.devices[2].price_per_hour_usd == 1.0);
  CHECK_FALSE(c.devices[3].price_per_hour_usd.has_value());
  CHECK(price_per_hour_usd(c, {0, 1, 2}) == 9.0);
  CHECK_FALSE(price_per_hour_usd(c, {2, 3}).has_value());

  // save_cluster writes the prices back, splitting entries where the price changes.
  const std::string path = scratch_file("prices_saved.yaml", "");
  save_cluster(c, path);
  const Cluster again = load_cluster(path);
  REQUIRE(again.devices.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(again.devices[i].model == c.devices[i].model);
    CHECK(again.devices[i].price_per_hour_usd == c.devices[i].price_per_hour_usd);
  }
}

TEST_CASE("a bad price is one error naming the file, the field and the unit") {
  const std::string negative = error_of(with("price_per_hour_usd: 4}", "price_per_hour_usd: -4}"));
  CHECK(negative.find("prices_bad.yaml: nodes[0].devices[0].price_per_hour_usd: expected a price in USD per "
                      "device-hour in [0, 10000], got '-4'") != std::string::npos);
  const std::string text = error_of(with("price_per_hour_usd: 1}", "price_per_hour_usd: cheap}"));
  CHECK(text.find("nodes[1].devices[0].price_per_hour_usd: expected a number, got 'cheap'") != std::string::npos);
  CHECK(text.find("hint: the price of one device for one hour in US dollars") != std::string::npos);
  CHECK(error_of(with("price_per_hour_usd: 1}", "price_per_hour_usd: [1]}")).find("price_per_hour_usd") !=
        std::string::npos);
  CHECK(error_of(with("price_per_hour_usd: 1}", "price_per_hour_usd: .nan}")).find("'.nan'") != std::string::npos);
}

TEST_CASE("a plan pays for the devices it uses, once each; USD per 1M tokens by hand") {
  const Cluster c = load_cluster(scratch_file("prices.yaml", kPriced));
  // $3/h at 1000 tokens/s: 3.6e6 tokens an hour, so $3 / 3.6 = $0.8333... per 1M tokens.
  CHECK(usd_per_million_tokens(3.0, 1000.0) == doctest::Approx(5.0 / 6.0).epsilon(1e-12));
  // Devices 0, 1 (A100, $4 each) and 2 (T4, $1) = $9/h; device 0 runs two stages (interleaved)
  // and is paid once. At 2000 tokens/s (7.2e6 an hour): $9 / 7.2 = $1.25 per 1M tokens.
  const PlanCost cost = plan_cost(plan_on(c, {{0, 2}, {1}, {0}}), at_tokens_per_s(2000, 1));
  CHECK(cost.priced);
  CHECK(cost.usd_per_hour == 9.0);
  CHECK(cost.usd_per_million_tokens == doctest::Approx(1.25).epsilon(1e-12));
  // A plan on an unpriced V100 has no price; one that leaves the V100s idle does.
  CHECK_FALSE(plan_cost(plan_on(c, {{0}, {3}}), at_tokens_per_s(2000, 1)).priced);
}

TEST_CASE("throughput ranks by step time; cost by USD per 1M tokens, then step time") {
  const Cluster c = load_cluster(scratch_file("prices.yaml", kPriced));
  // Fast and dear: both A100s ($8/h) at 2000 tokens/s = $1.111 per 1M tokens. Slow and cheap:
  // the T4 ($1/h) at 500 tokens/s = $0.5556 per 1M tokens.
  const Plan fast = plan_on(c, {{0, 1}}), cheap = plan_on(c, {{2}});
  const Estimate fast_e = at_tokens_per_s(2000, 1.0), cheap_e = at_tokens_per_s(500, 4.0);
  CHECK(ranks_before(Objective::throughput, fast, fast_e, cheap, cheap_e));
  CHECK_FALSE(ranks_before(Objective::throughput, cheap, cheap_e, fast, fast_e));
  CHECK(ranks_before(Objective::cost, cheap, cheap_e, fast, fast_e));
  CHECK_FALSE(ranks_before(Objective::cost, fast, fast_e, cheap, cheap_e));
  // Equal cost per token: the shorter step first. One A100 at 1000 tokens/s is $4 / 3.6.
  const Plan one = plan_on(c, {{0}});
  const Estimate one_e = at_tokens_per_s(1000, 2.0);
  CHECK(plan_cost(one, one_e).usd_per_million_tokens == doctest::Approx(plan_cost(fast, fast_e).usd_per_million_tokens));
  CHECK(ranks_before(Objective::cost, fast, fast_e, one, one_e));

  Objective o;
  CHECK(parse_objective("cost", &o));
  CHECK(o == Objective::cost);
  CHECK_FALSE(parse_objective("speed", &o));
}

// File: objective.h
// What the planner ranks plans by: throughput (the fastest step) or cost (the fewest dollars
// per million tokens, counting the hourly price of the devices a plan uses), and a plan's
// price under the cluster's price_per_hour_usd (docs/plan.md#cost).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/cost_model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

enum class Objective { throughput, cost };

/// "throughput", "cost".
const char* to_string(Objective o);
/// Parses the names above; returns false on anything else.
bool parse_objective(const std::string& text, Objective* out);

/// A plan's price. Devices the plan leaves out are not counted: the cost objective assumes
/// that idle devices are given back (a user who pays for the whole cluster anyway wants the
/// throughput objective).
struct PlanCost {
  bool priced = false;                 // every device of the plan's stages has a price
  double usd_per_hour = 0;             // the sum of those devices' prices
  double usd_per_million_tokens = 0;   // usd_per_hour / (tokens per hour / 1e6); 0 unless priced
};

/// The hourly price of `devices` (ids of `cluster`), or nothing when one of them has no price.
std::optional<double> price_per_hour_usd(const Cluster& cluster, const std::vector<int>& devices);

/// Dollars per million tokens at `usd_per_hour` and `tokens_per_s` (> 0):
/// usd_per_hour * 1e6 / (3600 * tokens_per_s).
double usd_per_million_tokens(double usd_per_hour, double tokens_per_s);

/// The devices `plan`'s stages use, each once (a device that runs several stages under
/// interleaving counts once).
std::set<int> used_devices(const Plan& plan);

/// The price of the devices `plan`'s stages use, and per million tokens at `estimate`'s rate.
PlanCost plan_cost(const Plan& plan, const Estimate& estimate);

/// True when plan a ranks before plan b under `objective` (both of one model and global batch):
/// throughput, the shorter step time; cost, the fewer dollars per million tokens, then the
/// shorter step time. Both plans must be priced under cost (check_prices).
bool ranks_before(Objective objective, const Plan& a, const Estimate& ea, const Plan& b, const Estimate& eb);

/// Throws whale::Error naming the first of `devices` (usable ids) without a price when the
/// cost objective or a budget needs one for each (`needed_by`: the option that needs them, e.g.
/// "--objective cost"). Does nothing when `needs_prices` is false.
void check_prices(const Cluster& cluster, const std::vector<int>& devices, bool needs_prices,
                  const std::string& needed_by);

/// "$12.34/h" style money text for reports: "%.4g" dollars.
std::string format_usd(double usd);

}  // namespace whale::plan

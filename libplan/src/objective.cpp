// File: objective.cpp
// Objective names, plan prices, the ranking comparator and the price check.
#include "whale/plan/objective.h"

#include <cstdio>
#include <set>

#include "whale/plan/error.h"

namespace whale::plan {

const char* to_string(Objective o) { return o == Objective::cost ? "cost" : "throughput"; }

bool parse_objective(const std::string& text, Objective* out) {
  for (Objective o : {Objective::throughput, Objective::cost}) {
    if (text == to_string(o)) {
      *out = o;
      return true;
    }
  }
  return false;
}

std::optional<double> price_per_hour_usd(const Cluster& cluster, const std::vector<int>& devices) {
  double sum = 0;
  for (int id : devices) {
    const std::optional<double>& price = cluster.devices.at(id).price_per_hour_usd;
    if (!price) return std::nullopt;
    sum += *price;
  }
  return sum;
}

double usd_per_million_tokens(double usd_per_hour, double tokens_per_s) {
  constexpr double kSecondsPerHour = 3600;
  constexpr double kTokensPerMillion = 1e6;
  return usd_per_hour * kTokensPerMillion / (kSecondsPerHour * tokens_per_s);
}

std::set<int> used_devices(const Plan& plan) {
  std::set<int> used;
  for (const Stage& s : plan.stages) used.insert(s.devices.begin(), s.devices.end());
  return used;
}

PlanCost plan_cost(const Plan& plan, const Estimate& estimate) {
  const std::set<int> used = used_devices(plan);   // a device that runs several stages is paid once
  const std::optional<double> price = price_per_hour_usd(plan.cluster, std::vector<int>(used.begin(), used.end()));
  PlanCost cost;
  if (!price) return cost;
  cost.priced = true;
  cost.usd_per_hour = *price;
  if (estimate.tokens_per_s > 0) cost.usd_per_million_tokens = usd_per_million_tokens(*price, estimate.tokens_per_s);
  return cost;
}

bool ranks_before(Objective objective, const Plan& a, const Estimate& ea, const Plan& b, const Estimate& eb) {
  if (objective == Objective::cost) {
    const double ca = plan_cost(a, ea).usd_per_million_tokens;
    const double cb = plan_cost(b, eb).usd_per_million_tokens;
    if (ca != cb) return ca < cb;
  }
  return ea.step_time_s < eb.step_time_s;
}

void check_prices(const Cluster& cluster, const std::vector<int>& devices, bool needs_prices,
                  const std::string& needed_by) {
  if (!needs_prices) return;
  for (int id : devices) {
    const Device& d = cluster.devices.at(id);
    if (d.price_per_hour_usd) continue;
    // The node's name, not an index: nodes with a count are expanded from one entry.
    throw Error(cluster.source_file, "",
                needed_by + " needs a price for every usable device: device " + std::to_string(id) + " (" + d.model +
                    " on node " + cluster.nodes.at(d.node).name + ") has no price_per_hour_usd",
                "add price_per_hour_usd to its device entry (USD per device-hour, docs/cluster.md#prices), or "
                "exclude it with a hints file (docs/hints.md)");
  }
}

std::string format_usd(double usd) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "$%.4g", usd);
  return buf;
}

}  // namespace whale::plan

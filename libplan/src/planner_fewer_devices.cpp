// File: planner_fewer_devices.cpp
// Plans on fewer devices than the usable ones: for a global batch too small for every
// pipeline on all of them, and for a budget that no plan found on them meets.
#include "planner_fewer_devices.h"

#include <algorithm>
#include <cmath>

#include "whale/plan/error.h"
#include "whale/plan/objective.h"

namespace whale::plan {
namespace {

// search_plans on the usable devices less `left_out` (the same hints and options otherwise,
// within the time left from `start`), with `left_out` listed idle for `reason`.
PlanResult search_without(const Cluster& cluster, const Model& model, const CostModel& cost,
                          const PlannerOptions& options, Clock::time_point start, const std::vector<int>& left_out,
                          const std::string& reason) {
  PlannerOptions fewer = within_time_left(options, start);
  std::vector<int>& excluded = fewer.hints.exclude_devices;
  excluded.insert(excluded.end(), left_out.begin(), left_out.end());
  std::sort(excluded.begin(), excluded.end());
  PlanResult result = search_plans(cluster, model, cost, fewer);
  for (int d : left_out) add_idle_device(&result.idle, cluster, d, reason);
  for (IdleDevices& e : result.idle) std::sort(e.devices.begin(), e.devices.end());
  return result;
}

std::vector<int> ordered(const Cluster& cluster, const Model& model, const std::vector<int>& usable) {
  return ordered_devices(cluster, usable, model.training.precision, model.training.framework_precision);
}

}  // namespace

PlanResult search_for_small_batch(const Cluster& cluster, const Model& model, const CostModel& cost,
                                  const PlannerOptions& options, Clock::time_point start,
                                  const std::vector<int>& usable, int smallest_dp, int batch) {
  const std::vector<int> order = ordered(cluster, model, usable);
  // batch < smallest_dp <= devices: at least `batch` devices kept, and fewer than all.
  const long kept = static_cast<long>(static_cast<long long>(order.size()) * batch / smallest_dp);
  const std::vector<int> left_out(order.begin() + kept, order.end());
  std::vector<int> kept_devices(order.begin(), order.begin() + kept);
  std::sort(kept_devices.begin(), kept_devices.end());
  const std::string why = "the global batch of " + std::to_string(batch) +
                          " sample(s) is smaller than the data-parallel degree of every pipeline on all " +
                          std::to_string(usable.size()) + " usable devices (" + std::to_string(smallest_dp) +
                          " at least)";
  try {
    return search_without(cluster, model, cost, options, start, left_out, why + ": each replica needs a sample");
  } catch (const Error& e) {
    const std::string more = "a larger --global-batch uses more devices";
    throw Error(e.file(), e.yaml_path(),
                e.expected() + ", searched on devices " + format_device_list(kept_devices) + " only: " + why,
                e.hint().empty() ? more : e.hint() + "; " + more);
  }
}

std::optional<PlanResult> search_within_budget(const Cluster& cluster, const Model& model, const CostModel& cost,
                                               const PlannerOptions& options, Clock::time_point start,
                                               const std::vector<int>& usable) {
  const double budget = *options.budget_usd_per_hour;
  const std::vector<int> order = ordered(cluster, model, usable);
  std::optional<PlanResult> best;
  std::vector<std::string> tried;
  for (int first : order) {
    const std::string& m = cluster.devices[first].model;
    if (std::find(tried.begin(), tried.end(), m) != tried.end()) continue;
    tried.push_back(m);
    const std::optional<double> price = cluster.devices[first].price_per_hour_usd;
    const long affordable = price && *price > 0 ? static_cast<long>(std::floor(budget / *price)) : 0;
    if (affordable < 1) continue;
    std::vector<int> left_out;
    long taken = 0;
    for (int d : order) {
      if (cluster.devices[d].model == m && taken < affordable) {
        ++taken;
      } else {
        left_out.push_back(d);
      }
    }
    const std::string reason = "more devices cost more than the budget of " + format_usd(budget) +
                               " per hour in every plan found";
    try {
      PlanResult r = search_without(cluster, model, cost, options, start, left_out, reason);
      if (!best || ranks_before(options.objective, r.best().plan, r.best().estimate, best->best().plan,
                                best->best().estimate))
        best = std::move(r);
    } catch (const Error&) {
      // The model does not fit on what the budget pays for of this device model.
    }
  }
  return best;
}

}  // namespace whale::plan

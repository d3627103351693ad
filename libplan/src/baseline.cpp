// File: baseline.cpp
// The comparison printed with every plan: the best heterogeneity-unaware uniform plan
// (Megatron-LM / DeepSpeed style) and HetHub's upper bound (each device model planned alone).
#include <algorithm>
#include <chrono>
#include <functional>

#include "planner_engine.h"
#include "whale/plan/planner.h"
#include "whale/plan/precision_pricing.h"
#include "whale/plan/subset_search_cache.h"

namespace whale::plan {
namespace {

Clock::time_point deadline_of(const PlannerOptions& options) {
  if (options.time_limit_s <= 0) return Clock::time_point::max();
  return planner_now(options) + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(options.time_limit_s));
}


// The usable devices (only the hints' exclusion applies) of the given device models.
std::vector<int> usable_devices_of(const Cluster& cluster, const PlannerOptions& options,
                                   const std::vector<std::string>& device_models) {
  Hints only_exclusion;
  only_exclusion.exclude_devices = options.hints.exclude_devices;
  std::vector<int> out;
  for (int d : usable_devices(only_exclusion, cluster)) {
    const std::string& m = cluster.devices[d].model;
    if (std::find(device_models.begin(), device_models.end(), m) != device_models.end()) out.push_back(d);
  }
  return out;
}

// The best plan of `limits.devices` (the usable devices of `device_models`), searched like
// the main search with no hint beyond exclusions; `found` is false when none fits.
RankedPlan search_devices(const Cluster& cluster, const Model& model, const CostModel& cost,
                          const PlannerOptions& options, const std::vector<std::string>& device_models,
                          const SpaceLimits& limits, bool* found) {
  const int batch = batch_of(model, options);
  EngineInput in;
  // The time limit covers the enumeration too; a cut one leaves the best of what it listed.
  const Clock::time_point deadline = deadline_of(options);
  bool cut = false;
  in.structures = holding_structures(cluster, model, limits, options, deadline, &in.structures_left_out, &cut);
  in.choices = [&](const Structure& s) { return enumerate_choices(s, model, batch, limits); };
  in.global_batch = batch;
  in.phase = device_models.size() == 1 ? "upper bound " + device_models.front() : "without the weakest";
  in.uneven_experts = device_models.size() > 1;  // as the main search, where ep groups can mix models
  in.keep = 1;
  EngineOutput eo = run_engine(cluster, model, cost, in, options, deadline);
  *found = !eo.ranked.empty();
  return *found ? eo.ranked.front() : RankedPlan{};
}

}  // namespace

int batch_of(const Model& model, const PlannerOptions& options) {
  return options.global_batch > 0 ? options.global_batch : model.training.global_batch;
}

RankedPlan search_baseline(const Cluster& cluster, const Model& model, const CostModel& cost,
                           const PlannerOptions& options, bool* found, std::string* missing,
                           const std::function<bool(const Structure&)>& keep) {
  const int batch = batch_of(model, options);
  Hints only_exclusion;
  only_exclusion.exclude_devices = options.hints.exclude_devices;
  EngineInput in;
  std::vector<Structure> structures = uniform_structures(cluster, model, usable_devices(only_exclusion, cluster));
  if (keep) structures.erase(std::remove_if(structures.begin(), structures.end(), std::not_fn(keep)), structures.end());
  in.structures = std::make_shared<const std::vector<Structure>>(std::move(structures));
  // Megatron's rules: 1f1b, micro-batches divisible by dp (even shares).
  in.choices = [&](const Structure& s) {
    std::vector<Choice> out;
    const int dp = s.groups.front()->dp();
    for (int b = dp; b <= batch; b += dp) {
      if (batch % b == 0) out.push_back(Choice{b, batch / b, Schedule{ScheduleKind::one_f_one_b, 1}});
    }
    return out;
  };
  in.rules.even_layers = true;
  in.rules.even_shares = true;
  in.rules.uniform_rung = true;
  in.global_batch = batch;
  in.phase = "baseline";
  in.keep = 1;
  EngineOutput eo = run_engine(cluster, model, cost, in, options, deadline_of(options));
  *found = !eo.ranked.empty();
  if (!*found && missing) {
    *missing = eo.stats.timed_out     ? "its search was cut by the time limit before one was found (raise --time-limit)"
               : eo.choices_total == 0 ? "none divides the global batch of " + std::to_string(batch) +
                                           " samples into micro-batches of a multiple of its data-parallel degree"
               : !eo.any_fit          ? "none fits in memory"
                                      : "none fits in memory by the simulator's count";
  }
  return *found ? eo.ranked.front() : RankedPlan{};
}

std::vector<std::string> upper_bound_models(const Cluster& cluster, const PlannerOptions& options) {
  std::vector<std::string> out;
  for (const std::string& device_model : cluster.device_models()) {
    if (!usable_devices_of(cluster, options, {device_model}).empty()) out.push_back(device_model);
  }
  return out;
}

double search_model_alone(const Cluster& cluster, const Model& model, const CostModel& cost,
                          const PlannerOptions& options, const std::string& device_model) {
  bool found = false;
  const RankedPlan best = plan_model_alone(cluster, model, cost, options, device_model, &found);
  return found ? best.estimate.samples_per_s : 0.0;
}

RankedPlan plan_model_alone(const Cluster& cluster, const Model& model, const CostModel& cost,
                            const PlannerOptions& options, const std::string& device_model, bool* found) {
  return plan_models_together(cluster, model, cost, options, {device_model}, found);
}

RankedPlan plan_models_together(const Cluster& cluster, const Model& model, const CostModel& cost,
                                const PlannerOptions& options, const std::vector<std::string>& device_models,
                                bool* found) {
  *found = false;
  SpaceLimits limits;
  limits.devices = usable_devices_of(cluster, options, device_models);
  if (limits.devices.empty()) return RankedPlan{};
  if (!options.subset_cache) return search_devices(cluster, model, cost, options, device_models, limits, found);
  // Searched in the standing precision, which these devices price alike: its plan is this
  // precision's plan, but for the precision it names.
  Model standing = model;
  standing.training.precision = standing_precision(cluster, device_models, model.training);
  RankedPlan best = options.subset_cache->get(
      SubsetSearchCache::key_of(cluster, standing, limits.devices, cost, options, batch_of(model, options)), found,
      [&](bool* f) { return search_devices(cluster, standing, cost, options, device_models, limits, f); });
  if (*found) {
    best.plan.precision = model.training.precision;
    best.plan.model.training.precision = model.training.precision;
  }
  return best;
}

std::vector<std::vector<std::string>> strongest_subsets(const std::vector<std::string>& device_models,
                                                        const std::vector<double>& samples_per_s) {
  std::vector<std::size_t> order(device_models.size());
  for (std::size_t m = 0; m < order.size(); ++m) order[m] = m;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return samples_per_s[a] > samples_per_s[b]; });
  std::vector<std::vector<std::string>> out;
  for (std::size_t k = 2; k + 1 <= order.size(); ++k) {
    std::vector<std::string> subset;
    for (std::size_t i = 0; i < k; ++i) subset.push_back(device_models[order[i]]);
    out.push_back(subset);
  }
  return out;
}

UpperBound upper_bound_of(const std::vector<std::string>& device_models, const std::vector<double>& samples_per_s) {
  UpperBound ub;
  for (std::size_t m = 0; m < device_models.size(); ++m) {
    ub.per_model.push_back({device_models[m], samples_per_s[m]});
    ub.samples_per_s += samples_per_s[m];
  }
  return ub;
}

UpperBound search_upper_bound(const Cluster& cluster, const Model& model, const CostModel& cost,
                              const PlannerOptions& options) {
  const std::vector<std::string> models = upper_bound_models(cluster, options);
  std::vector<double> samples_per_s;
  for (const std::string& m : models) samples_per_s.push_back(search_model_alone(cluster, model, cost, options, m));
  return upper_bound_of(models, samples_per_s);
}

}  // namespace whale::plan

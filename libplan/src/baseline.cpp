// File: baseline.cpp
// The comparison printed with every plan: the best heterogeneity-unaware uniform plan
// (Megatron-LM / DeepSpeed style) and HetHub's upper bound (each device model planned alone).
#include <chrono>

#include "planner_engine.h"
#include "whale/plan/planner.h"

namespace whale::plan {
namespace {

Clock::time_point deadline_of(const PlannerOptions& options) {
  if (options.time_limit_s <= 0) return Clock::time_point::max();
  return planner_now(options) + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(options.time_limit_s));
}

int batch_of(const Model& model, const PlannerOptions& options) {
  return options.global_batch > 0 ? options.global_batch : model.training.global_batch;
}

}  // namespace

RankedPlan search_baseline(const Cluster& cluster, const Model& model, const CostModel& cost,
                           const PlannerOptions& options, bool* found) {
  const int batch = batch_of(model, options);
  Hints only_exclusion;
  only_exclusion.exclude_devices = options.hints.exclude_devices;
  EngineInput in;
  in.structures = uniform_structures(cluster, model, usable_devices(only_exclusion, cluster));
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
  return *found ? eo.ranked.front() : RankedPlan{};
}

UpperBound search_upper_bound(const Cluster& cluster, const Model& model, const CostModel& cost,
                              const PlannerOptions& options) {
  const int batch = batch_of(model, options);
  Hints only_exclusion;
  only_exclusion.exclude_devices = options.hints.exclude_devices;
  const std::vector<int> usable = usable_devices(only_exclusion, cluster);
  UpperBound ub;
  for (const std::string& device_model : cluster.device_models()) {
    SpaceLimits limits;
    for (int d : usable) {
      if (cluster.devices[d].model == device_model) limits.devices.push_back(d);
    }
    if (limits.devices.empty()) continue;
    EngineInput in;
    in.structures = holding_structures(cluster, model, limits, options.strategies, &in.structures_left_out);
    in.choices = [&](const Structure& s) { return enumerate_choices(s, model, batch, limits); };
    in.global_batch = batch;
    in.phase = "upper bound " + device_model;
    in.keep = 1;
    EngineOutput eo = run_engine(cluster, model, cost, in, options, deadline_of(options));
    const double sps = eo.ranked.empty() ? 0.0 : eo.ranked.front().estimate.samples_per_s;
    ub.per_model.push_back({device_model, sps});
    ub.samples_per_s += sps;
  }
  return ub;
}

}  // namespace whale::plan

// File: planner_fewer_devices.h
// Plans on fewer devices than the usable ones, where every plan on all of them is ruled out by
// the global batch or the budget: each subset searched anew by search_plans (its comparison
// too, on the subset), the devices left out reported idle with the reason. Private to the planner.
#pragma once

#include <optional>
#include <vector>

#include "planner_engine.h"

namespace whale::plan {

/// A global batch of fewer samples than the replicas of every pipeline on `usable` (each has
/// `smallest_dp` at least): the plan of the first devices of ordered_devices that `batch`
/// replicas of the pipeline with the fewest fill, searched within the time left from `start`.
/// An error of that search is rethrown naming the devices searched and why.
PlanResult search_for_small_batch(const Cluster& cluster, const Model& model, const CostModel& cost,
                                  const PlannerOptions& options, Clock::time_point start,
                                  const std::vector<int>& usable, int smallest_dp, int batch);

/// Where the global batch starves `usable`: fewer samples than the tensor-parallel replicas
/// its devices form at each device model's largest degree (tp_of_fed_replicas), so that every
/// plan on all of them has fewer micro-batches than stages, or replicas without a sample.
/// Then the plan of the first devices of ordered_devices whose replicas at those degrees the
/// batch feeds (the rest idle), searched within the time left from `start`; nothing where the
/// batch feeds every usable device, or where no plan fits on those devices. Its fed devices
/// never starve a search again, so the search it makes does not come back here.
std::optional<PlanResult> search_fed_devices(const Cluster& cluster, const Model& model, const CostModel& cost,
                                             const PlannerOptions& options, Clock::time_point start,
                                             const std::vector<int>& usable, int batch);

/// Where the devices of `usable` together cost more than options.budget_usd_per_hour: for each
/// priced device model, as many of its usable devices as the budget pays for (the first in
/// ordered_devices), searched alone; then, where it mixes models, every device in
/// ordered_devices' order (the strongest first) that the budget left still pays for; each set
/// also without the devices of nodes it takes in part. The best plan of these by the
/// objective, or nothing when none fits.
std::optional<PlanResult> search_within_budget(const Cluster& cluster, const Model& model, const CostModel& cost,
                                               const PlannerOptions& options, Clock::time_point start,
                                               const std::vector<int>& usable);

}  // namespace whale::plan

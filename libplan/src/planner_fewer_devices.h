// File: planner_fewer_devices.h
// Plans on fewer devices than the usable ones, where every plan on all of them is ruled out by
// the global batch or the budget (each subset searched anew by search_plans, its comparison
// too, on the subset; the devices left out reported idle with the reason), or where the best
// plan on all of them is mostly idle (fewer nodes), or where the hints rule out every plan on all
// of them. Private to the planner.
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
/// its devices form at each device model's largest degree (the tp_degrees of that model's
/// devices in the whole cluster). Then the first devices of ordered_devices whose replicas the
/// batch feeds (their shares of a replica, 1/tp a device, summing to the batch at most);
/// nothing where the batch feeds every device of `usable`.
std::optional<std::vector<int>> fed_devices(const Cluster& cluster, const Model& model, const std::vector<int>& usable,
                                            int batch);

/// Where the global batch starves `usable` (`fed`: what fed_devices gave, the first devices of
/// ordered_devices whose replicas the batch feeds): every plan on all of them has fewer
/// micro-batches than stages, or replicas without a sample. Then the plan of `fed` (the rest
/// idle), searched within the time left from `start`; nothing where `fed` is empty or no plan
/// fits on those devices. The fed devices never starve a search again, so the search it makes
/// does not come back here.
std::optional<PlanResult> search_fed_devices(const Cluster& cluster, const Model& model, const CostModel& cost,
                                             const PlannerOptions& options, Clock::time_point start,
                                             const std::vector<int>& usable, int batch, const std::vector<int>& fed);

/// Where the best plan found on `usable` (`best`) keeps the compute streams of its devices busy
/// for a small share of its step (bubbles and exposed communication take the rest, as when
/// many nodes share a slow network): a plan on fewer devices whose summed peak is a share phi
/// of the best plan's devices' runs its compute about 1/phi times as long at the same
/// efficiency, so it can win only where phi exceeds that busy share (under the cost objective,
/// where phi exceeds the busy share times the part's share of the hourly price: a part of one
/// model's nodes, at the same price per peak, wherever the plan is busy for less than its whole
/// step). For each device model: its full nodes (those holding as many of its devices as any
/// node) where it has others, then the first half of its full nodes in ordered_devices' order
/// (rounded up: 2 of 3), a quarter, ... down to one node; each part that can win is searched
/// anew without comparison and budget (within the time left from `start`). Their kept plans,
/// labelled with the devices they run on. (Each model's devices all together, and the strongest models together, are the
/// comparison's searches.) Sets `*timed_out` where the time limit cut or ended these searches.
std::vector<RankedPlan> search_fewer_nodes(const Cluster& cluster, const Model& model, const CostModel& cost,
                                           const PlannerOptions& options, Clock::time_point start,
                                           const std::vector<int>& usable, const RankedPlan& best, bool* timed_out);

/// Where the hints rule out every plan on all of `usable` (`why`: how, e.g. "no pipeline runs
/// the hinted schedules (wave) at the global batch of 3 sample(s)"): the plan on fewer devices,
/// the first of ordered_devices, that the hints allow. The counts tried, the most first: every
/// count below all of them on clusters of at most kFewerDevicesTriedAll usable devices, else the
/// whole nodes of that order (each prefix ending where a node ends); at most
/// kFewerDeviceCountsTried of them, each searched without the comparison within the time left
/// from `start` (past the time limit the counts stop once one has a plan, and the plan returned
/// has stats.timed_out set, as where a count's search was cut); the best by the objective is
/// searched again with it, the rest idle for a reason that quotes `why`. Nothing where no count
/// has a plan. The searches it makes do not come back here (options.idle_devices_for_hints is
/// off in them).
constexpr std::size_t kFewerDevicesTriedAll = 16;
constexpr std::size_t kFewerDeviceCountsTried = 16;
std::optional<PlanResult> search_fewer_for_hints(const Cluster& cluster, const Model& model, const CostModel& cost,
                                                 const PlannerOptions& options, Clock::time_point start,
                                                 const std::vector<int>& usable, const std::string& why);

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

// File: planner_fewer_devices.cpp
// Plans on fewer devices than the usable ones: for a global batch too small for every
// pipeline on all of them or too small to feed them, for a best plan on them that is mostly
// idle, for a budget that no plan found on them meets, and for hints that rule out every plan
// on all of them.
#include "planner_fewer_devices.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "whale/plan/error.h"
#include "whale/plan/objective.h"
#include "whale/plan/search_space.h"

namespace whale::plan {
namespace {

// `options` within the time left from `start`, with `left_out` excluded besides the hints' own.
PlannerOptions options_without(const PlannerOptions& options, Clock::time_point start,
                               const std::vector<int>& left_out) {
  PlannerOptions fewer = within_time_left(options, start);
  std::vector<int>& excluded = fewer.hints.exclude_devices;
  excluded.insert(excluded.end(), left_out.begin(), left_out.end());
  std::sort(excluded.begin(), excluded.end());
  return fewer;
}

// search_plans on the usable devices less `left_out` (the same hints and options otherwise,
// within the time left from `start`), with `left_out` listed idle for `reason`.
PlanResult search_without(const Cluster& cluster, const Model& model, const CostModel& cost,
                          const PlannerOptions& options, Clock::time_point start, const std::vector<int>& left_out,
                          const std::string& reason) {
  const PlannerOptions fewer = options_without(options, start, left_out);
  PlanResult result = search_plans(cluster, model, cost, fewer);
  for (int d : left_out) add_idle_device(&result.idle, cluster, d, reason);
  for (IdleDevices& e : result.idle) std::sort(e.devices.begin(), e.devices.end());
  return result;
}

std::vector<int> ordered(const Cluster& cluster, const Model& model, const std::vector<int>& usable) {
  return ordered_devices(cluster, usable, model.training.precision, model.training.framework_precision);
}

// The largest tensor-parallel degree the search may give each device model of `cluster`
// (tp_degrees of all its devices, so that it is the same on any part of the cluster).
std::map<std::string, int> tp_of_fed_replicas(const Cluster& cluster, const Model& model) {
  std::map<std::string, std::vector<int>> by_model;
  for (std::size_t d = 0; d < cluster.devices.size(); ++d) by_model[cluster.devices[d].model].push_back(static_cast<int>(d));
  std::map<std::string, int> out;
  for (const auto& [name, devices] : by_model) {
    const std::vector<int> degrees = tp_degrees(cluster, model, devices);
    out[name] = degrees.empty() ? 1 : degrees.back();
  }
  return out;
}

}  // namespace

std::optional<std::vector<int>> fed_devices(const Cluster& cluster, const Model& model, const std::vector<int>& usable,
                                            int batch) {
  const std::map<std::string, int> tp = tp_of_fed_replicas(cluster, model);
  // Replicas are counted in shares of a device (1/tp each), so that the devices fed are those
  // whose shares sum to the batch at most; a relative 1e-9 over the rounding of the sums.
  const double fed = batch * (1 + 1e-9);
  double replicas = 0;
  for (int d : usable) replicas += 1.0 / tp.at(cluster.devices[d].model);
  if (replicas <= fed) return std::nullopt;
  std::vector<int> kept;
  double taken = 0;
  for (int d : ordered(cluster, model, usable)) {
    const double share = 1.0 / tp.at(cluster.devices[d].model);
    if (taken + share > fed) break;
    taken += share;
    kept.push_back(d);
  }
  return kept;
}

std::optional<PlanResult> search_fed_devices(const Cluster& cluster, const Model& model, const CostModel& cost,
                                             const PlannerOptions& options, Clock::time_point start,
                                             const std::vector<int>& usable, int batch,
                                             const std::vector<int>& fed) {
  if (fed.empty()) return std::nullopt;
  std::vector<int> kept = fed;
  const std::vector<int> order = ordered(cluster, model, usable);
  const std::vector<int> left_out(order.begin() + static_cast<long>(kept.size()), order.end());
  std::sort(kept.begin(), kept.end());
  const std::string reason = "the global batch of " + std::to_string(batch) +
                             " sample(s) feeds the tensor-parallel replicas of devices " + format_device_list(kept) +
                             " only (each device model at its largest degree): on more devices every plan has "
                             "fewer micro-batches than stages, or replicas without a sample";
  try {
    return search_without(cluster, model, cost, options, start, left_out, reason);
  } catch (const Error&) {
    return std::nullopt;   // no plan fits on the fed devices alone
  }
}

std::vector<RankedPlan> search_fewer_nodes(const Cluster& cluster, const Model& model, const CostModel& cost,
                                           const PlannerOptions& options, Clock::time_point start,
                                           const std::vector<int>& usable, const RankedPlan& best, bool* timed_out) {
  const Estimate& e = best.estimate;
  if (e.step_time_s <= 0) return {};
  const double busy_share = e.breakdown.compute_s / e.step_time_s;
  const auto peak_of = [&](int d) {
    return gemm_peak_or_zero(cluster.profiles.at(cluster.devices[d].model), model.training.precision,
                             model.training.framework_precision);
  };
  const auto usd_of = [&](int d) { return cluster.devices[d].price_per_hour_usd.value_or(0.0); };
  double used_peak = 0, used_usd = 0;
  for (int d : used_devices(best.plan)) {
    used_peak += peak_of(d);
    used_usd += usd_of(d);
  }
  const bool by_cost = options.objective == Objective::cost && used_usd > 0;
  const std::vector<int> order = ordered(cluster, model, usable);
  // Each device model's blocks (a node's devices of that model), in the order of `order`.
  std::vector<std::pair<std::string, std::vector<std::vector<int>>>> blocks_of_model;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Device& device = cluster.devices[order[i]];
    auto m = std::find_if(blocks_of_model.begin(), blocks_of_model.end(),
                          [&](const auto& entry) { return entry.first == device.model; });
    if (m == blocks_of_model.end()) m = blocks_of_model.insert(m, {device.model, {}});
    if (i == 0 || cluster.devices[order[i - 1]].node != device.node || cluster.devices[order[i - 1]].model != device.model)
      m->second.emplace_back();
    m->second.back().push_back(order[i]);
  }
  std::vector<RankedPlan> out;
  for (const auto& entry : blocks_of_model) {
    // The model's full blocks (as many of its devices as its largest), all of them where the
    // others are smaller, then half of them (rounded up), a quarter, ... down to one.
    const std::vector<std::vector<int>>& all_blocks = entry.second;
    std::size_t largest = 0;
    for (const std::vector<int>& b : all_blocks) largest = std::max(largest, b.size());
    std::vector<std::vector<int>> blocks;
    for (const std::vector<int>& b : all_blocks) {
      if (b.size() == largest) blocks.push_back(b);
    }
    std::vector<std::size_t> counts;
    if (blocks.size() < all_blocks.size()) counts.push_back(blocks.size());
    for (std::size_t count = blocks.size(); count > 1;) {
      count = (count + 1) / 2;
      counts.push_back(count);
    }
    for (std::size_t count : counts) {
      std::vector<int> kept;
      double kept_peak = 0, kept_usd = 0;
      for (std::size_t b = 0; b < count; ++b) {
        for (int d : blocks[b]) {
          kept.push_back(d);
          kept_peak += peak_of(d);
          kept_usd += usd_of(d);
        }
      }
      if (kept_peak >= used_peak || kept_peak <= 0) continue;
      // At the best plan's efficiency the part's step is busy_share * used_peak / kept_peak of
      // the best plan's at least, and its cost per token that times kept_usd / used_usd. Fewer
      // blocks of one model keep less peak at the same price per peak: once the part cannot
      // win, none of fewer blocks can.
      const double least_ratio = busy_share * used_peak / kept_peak * (by_cost ? kept_usd / used_usd : 1.0);
      if (least_ratio >= 1) break;
      if (options.time_limit_s > 0 &&
          std::chrono::duration<double>(planner_now(options) - start).count() >= options.time_limit_s) {
        *timed_out = true;
        return out;
      }
      std::sort(kept.begin(), kept.end());
      std::vector<int> left_out;
      for (int d : order) {
        if (!std::binary_search(kept.begin(), kept.end(), d)) left_out.push_back(d);
      }
      PlannerOptions fewer = options_without(options, start, left_out);
      fewer.compare = false;
      fewer.budget_usd_per_hour.reset();   // the budget applies to the merged candidates
      try {
        PlanResult r = search_plans(cluster, model, cost, fewer);
        *timed_out = *timed_out || r.stats.timed_out;
        for (RankedPlan& p : r.ranked) {
          p.label += " on devices " + format_device_list(kept);
          out.push_back(std::move(p));
        }
      } catch (const Error&) {
        break;   // no plan fits on these devices, nor on fewer
      }
    }
  }
  return out;
}

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

std::optional<PlanResult> search_fewer_for_hints(const Cluster& cluster, const Model& model, const CostModel& cost,
                                                 const PlannerOptions& options, Clock::time_point start,
                                                 const std::vector<int>& usable, const std::string& why) {
  const std::vector<int> order = ordered(cluster, model, usable);
  if (order.size() < 2) return std::nullopt;
  std::vector<std::size_t> counts;
  for (std::size_t k = order.size() - 1; k >= 1 && counts.size() < kFewerDeviceCountsTried; --k) {
    const bool node_ends = cluster.devices[order[k - 1]].node != cluster.devices[order[k]].node;
    if (order.size() <= kFewerDevicesTriedAll || node_ends) counts.push_back(k);
  }
  const auto left_out_at = [&](std::size_t k) { return std::vector<int>(order.begin() + static_cast<long>(k), order.end()); };
  std::optional<std::size_t> best_count;
  RankedPlan best;
  bool cut = false;   // the time limit left counts out or cut a count's search
  for (std::size_t k : counts) {
    // As in the main search, the time limit stops the counts only once one has a plan.
    if (best_count && options.time_limit_s > 0 &&
        std::chrono::duration<double>(planner_now(options) - start).count() >= options.time_limit_s) {
      cut = true;
      break;
    }
    PlannerOptions fewer = options_without(options, start, left_out_at(k));
    fewer.compare = false;
    fewer.idle_devices_for_hints = false;
    try {
      const PlanResult r = search_plans(cluster, model, cost, fewer);
      cut = cut || r.stats.timed_out;
      if (!best_count ||
          ranks_before(options.objective, r.best().plan, r.best().estimate, best.plan, best.estimate)) {
        best_count = k;
        best = r.best();
      }
    } catch (const Error&) {
      // The hints rule out these devices too, or the model does not fit on them.
    }
  }
  if (!best_count) return std::nullopt;
  PlannerOptions again = options;
  again.idle_devices_for_hints = false;
  const std::string reason = "the hints rule out every plan on all " + std::to_string(order.size()) +
                             " usable devices (" + why + "); the best plan found on fewer leaves these idle";
  try {
    PlanResult found = search_without(cluster, model, cost, again, start, left_out_at(*best_count), reason);
    found.stats.timed_out = found.stats.timed_out || cut;
    return found;
  } catch (const Error&) {
    return std::nullopt;   // the time left ran out before the plan was found again
  }
}

std::optional<PlanResult> search_within_budget(const Cluster& cluster, const Model& model, const CostModel& cost,
                                               const PlannerOptions& options, Clock::time_point start,
                                               const std::vector<int>& usable) {
  const double budget = *options.budget_usd_per_hour;
  const std::vector<int> order = ordered(cluster, model, usable);
  const auto price_of = [&](int d) { return cluster.devices[d].price_per_hour_usd.value_or(0.0); };
  const std::string reason =
      "more devices cost more than the budget of " + format_usd(budget) + " per hour in every plan found";
  std::optional<PlanResult> best;
  // The devices of `order` that `keep` takes, walked in that order with the hourly cost of those
  // taken so far.
  const auto kept_by = [&](const std::function<bool(int, double)>& keep) {
    std::vector<int> kept;
    double usd = 0;
    for (int d : order) {
      if (!keep(d, usd)) continue;
      kept.push_back(d);
      usd += price_of(d);
    }
    return kept;
  };
  // Flags by device id of the devices in `devices`.
  const auto flags_of = [&](const std::vector<int>& devices) {
    std::vector<char> flags(cluster.devices.size(), 0);
    for (int d : devices) flags[d] = 1;
    return flags;
  };
  const std::vector<char> is_usable = flags_of(order);
  std::set<std::vector<int>> searched;
  const auto search_kept = [&](const std::vector<int>& kept) {
    if (kept.empty() || !searched.insert(kept).second) return;
    const std::vector<char> is_kept = flags_of(kept);
    std::vector<int> left_out;
    for (int d : order) {
      if (!is_kept[d]) left_out.push_back(d);
    }
    try {
      PlanResult r = search_without(cluster, model, cost, options, start, left_out, reason);
      if (!best || ranks_before(options.objective, r.best().plan, r.best().estimate, best->best().plan,
                                best->best().estimate))
        best = std::move(r);
    } catch (const Error&) {
      // The model does not fit on these devices.
    }
  };
  // The devices of `kept` whose node's usable devices of their model are all kept: a node taken
  // in part gives an odd count that few pipelines divide (a100-v100 with gpt3-1.3b under $200/h:
  // 16 A100s and 43 V100s train at 150.4 samples/s, with the 40 V100s of whole nodes at 165.1).
  const auto on_whole_nodes = [&](const std::vector<int>& kept) {
    const std::vector<char> is_kept = flags_of(kept);
    std::vector<int> whole;
    for (int d : kept) {
      const std::vector<int>& node = cluster.nodes[cluster.devices[d].node].device_ids;
      if (std::all_of(node.begin(), node.end(), [&](int other) {
            return cluster.devices[other].model != cluster.devices[d].model || !is_usable[other] || is_kept[other];
          }))
        whole.push_back(d);
    }
    return whole;
  };
  // `kept`, and its devices on whole nodes where that leaves out some and not all.
  const auto search_kept_and_whole_nodes = [&](const std::vector<int>& kept) {
    search_kept(kept);
    const std::vector<int> whole = on_whole_nodes(kept);
    if (!whole.empty() && whole.size() < kept.size()) search_kept(whole);
  };
  const auto affordable = [&](int d, double usd) { return price_of(d) > 0 && usd + price_of(d) <= budget; };
  std::vector<std::string> models;
  for (int first : order) {  // each device model alone, as many of its devices as the budget pays for
    const std::string& m = cluster.devices[first].model;
    if (std::find(models.begin(), models.end(), m) != models.end()) continue;
    models.push_back(m);
    search_kept_and_whole_nodes(
        kept_by([&](int d, double usd) { return cluster.devices[d].model == m && affordable(d, usd); }));
  }
  // Then parts of several models: each device in turn while the budget left still pays for it,
  // the strongest first (2 A100s at $4 and a V100 at $2 under $10). A mix of one model is that
  // model's set above, which the memo of searched sets skips.
  search_kept_and_whole_nodes(kept_by(affordable));
  return best;
}

}  // namespace whale::plan

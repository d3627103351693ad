// File: planner.cpp
// search_plans: checks the inputs, runs the engine over the full search space, explains a
// failure (batch, hints, memory), and adds the baseline and upper-bound comparison.
#include "whale/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>

#include "planner_engine.h"
#include "planner_fewer_devices.h"
#include "whale/plan/error.h"
#include "whale/plan/search_experts.h"
#include "whale/plan/search_mixed_tp.h"
#include "whale/plan/task_pool.h"

namespace whale::plan {
namespace {

std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", b / kBytesPerGiB);
  return buf;
}

// What shrinks the activations of a step of `batch` samples, for a hint: a smaller batch only
// where micro-batches can still shrink, a shorter sequence for a family model, more memory.
std::string activation_remedies(const Model& model, int batch) {
  std::string out = batch > 1 ? "use a smaller micro-batch (a smaller --global-batch), " : "use ";
  if (model.family != "listed") out += "a shorter sequence (--sequence, now " + std::to_string(model.sequence) + " tokens), ";
  return out + "more devices or devices with more memory";
}

[[noreturn]] void throw_memory(const Model& model, const Cluster& cluster, const EngineOutput& eo, int batch) {
  const Shortfall& s = eo.closest;
  const std::string what = "model '" + model.name + "' does not fit on cluster '" + cluster.name +
                           "': at the closest plan (" + eo.closest_label + ") device " +
                           std::to_string(s.device) + " (" + s.device_model + ") needs " + gib(s.need_bytes) +
                           " but has " + gib(s.usable_bytes) + " usable, " + gib(s.gap()) + " short";
  std::string hint;
  if (s.state_bytes > s.usable_bytes) {
    // A double: the ratio may exceed any int (a huge model on a small cluster).
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.3g", std::ceil(s.state_bytes / s.usable_bytes));
    hint = "with full recomputation and a sharded optimizer its weights, gradients and optimizer state alone take " +
           gib(s.state_bytes) + ": use about " + factor +
           "x as many devices (or devices with more memory)";
  } else {
    hint = "full recomputation and a sharded optimizer are already on; activations take " +
           gib(s.need_bytes - s.state_bytes) + ": " + activation_remedies(model, batch);
  }
  throw Error(model.source_file, "", what, hint);
}

// Where layouts fit by the quick estimate but none by the simulator's count: the candidate
// whose fullest device was the least short.
[[noreturn]] void throw_simulated_memory(const Model& model, const Cluster& cluster, const EngineOutput& eo,
                                         int batch) {
  const Shortfall& s = eo.simulated_closest;
  throw Error(model.source_file, "",
              "model '" + model.name + "' does not fit on cluster '" + cluster.name +
                  "' by the simulator's count: at the closest plan (" + eo.simulated_closest_label + ") device " +
                  std::to_string(s.device) + " (" + s.device_model + ") peaks at " + gib(s.need_bytes) + " of its " +
                  gib(s.usable_bytes) + ", " + gib(s.gap()) + " short",
              activation_remedies(model, batch));
}

// "tp 4 and dp 2 on layers 1-24": what a layer hint asks.
std::string layer_hint_text(const LayerHint& h) {
  std::string degrees;
  if (h.tp) degrees += "tp " + std::to_string(h.tp);
  if (h.dp) degrees += std::string(degrees.empty() ? "" : " and ") + "dp " + std::to_string(h.dp);
  return degrees + " on layers " + std::to_string(h.first) + "-" + std::to_string(h.last);
}

// The first layer hint that rejected plans of `eo` (null when none did).
const LayerHint* first_rejecting_hint(const Hints& hints, const EngineOutput& eo) {
  for (size_t i = 0; i < eo.rejected_by_hint.size(); ++i) {
    if (eo.rejected_by_hint[i] > 0) return &hints.layers[i];
  }
  return nullptr;
}

[[noreturn]] void throw_hint(const Hints& hints, const EngineOutput& eo) {
  if (const LayerHint* h = first_rejecting_hint(hints, eo)) {
    const long rejected = eo.rejected_by_hint[static_cast<std::size_t>(h - hints.layers.data())];
    throw Error(hints.source_file, h->yaml_path,
                layer_hint_text(*h) + " cannot be met: all " + std::to_string(rejected) +
                    " plans that fit in memory give those layers other degrees",
                "the usable device groups cannot run these degrees there; relax or drop this hint");
  }
  throw Error(hints.source_file, "", "no plan honours the hints");
}

struct Comparison {
  RankedPlan baseline;
  bool baseline_found = false;
  std::string baseline_missing;
  bool searched_upper_bound = false;
  UpperBound upper_bound;
};

// The options of a comparison search (the baseline, one model of the upper bound): no
// comparison of its own, within what is left of the time limit that started at `start`.
PlannerOptions comparison_options(const PlannerOptions& options, Clock::time_point start) {
  PlannerOptions sub = within_time_left(options, start);
  sub.compare = false;
  sub.budget_usd_per_hour.reset();   // the budget applies to the merged candidates
  return sub;
}

std::vector<std::string> models_of(const Cluster& cluster, const std::vector<int>& devices) {
  std::vector<std::string> models;
  for (int d : devices) {
    const std::string& m = cluster.devices[d].model;
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  }
  return models;
}

// One device model and no hint beyond exclusions: the upper bound's only search is the main
// search (the same devices and space, searched at least as far), so its best plan stands.
bool upper_bound_is_own_best(const std::vector<std::string>& usable_models, const Hints& hints) {
  return usable_models.size() == 1 && hints.layers.empty() && hints.stage_boundaries.empty() &&
         hints.schedules.empty() && hints.max_pipeline_depth == 0;
}

UpperBound own_upper_bound(const std::vector<std::string>& usable_models, const PlanResult& result) {
  const double sps = result.best().estimate.samples_per_s;
  return UpperBound{sps, {{usable_models.front(), sps}}, {}};
}

Hints exclusions_only(const Hints& hints) {
  Hints out;
  out.exclude_devices = hints.exclude_devices;
  return out;
}

// Whether `plan` runs on every device of `usable` (a pipeline of whole replicas may leave some
// idle).
bool uses_every_device(const Plan& plan, const std::vector<int>& usable) {
  const std::set<int> used = used_devices(plan);
  return std::all_of(usable.begin(), usable.end(), [&](int d) { return used.count(d) > 0; });
}

// The usable devices `best` leaves out, by device model, with the reason: the best plan found
// on every usable device (`all_devices`, null when none was kept) is slower, dearer per token
// under the cost objective, or above the budget; or, with none kept, none fits or (where
// `only_whole_replicas_kept`: the main search's kept plans all leave devices idle) the faster
// plans run whole tensor-parallel replicas that these devices do not complete.
std::vector<IdleDevices> idle_devices(const Cluster& cluster, const std::vector<int>& usable,
                                      const RankedPlan& best, const RankedPlan* all_devices,
                                      bool only_whole_replicas_kept, const PlannerOptions& options) {
  char reason[256];
  const PlanCost all_cost = all_devices ? plan_cost(all_devices->plan, all_devices->estimate) : PlanCost{};
  if (all_devices && options.budget_usd_per_hour && all_cost.usd_per_hour > *options.budget_usd_per_hour) {
    std::snprintf(reason, sizeof reason, "every usable device together costs %s per hour, above the budget of %s",
                  format_usd(all_cost.usd_per_hour).c_str(), format_usd(*options.budget_usd_per_hour).c_str());
  } else if (all_devices && options.objective == Objective::cost) {
    const double best_cost = plan_cost(best.plan, best.estimate).usd_per_million_tokens;
    std::snprintf(reason, sizeof reason,
                  "using every device, the best plan found (%s) costs %s per 1M tokens, %.1f%% more",
                  all_devices->label.c_str(), format_usd(all_cost.usd_per_million_tokens).c_str(),
                  100.0 * (all_cost.usd_per_million_tokens / best_cost - 1.0));
  } else if (all_devices) {
    std::snprintf(reason, sizeof reason,
                  "using every device, the best plan found (%s) reaches %.4g samples/s, %.1f%% slower",
                  all_devices->label.c_str(), all_devices->estimate.samples_per_s,
                  100.0 * (1.0 - all_devices->estimate.samples_per_s / best.estimate.samples_per_s));
  } else if (only_whole_replicas_kept) {
    std::snprintf(reason, sizeof reason,
                  "the fastest plans found run tensor-parallel replicas inside nodes, which these devices do not "
                  "fill (too few of them in a node or a group)");
  } else {
    std::snprintf(reason, sizeof reason, "no plan found that uses every device fits in memory");
  }
  const std::set<int> used = used_devices(best.plan);
  std::vector<IdleDevices> out;
  for (int d : usable) {
    if (!used.count(d)) add_idle_device(&out, cluster, d, reason);
  }
  return out;
}

// Drops the plans whose used devices cost more per hour than the budget; throws when none is
// left, naming the cheapest plan found.
void keep_within_budget(std::vector<RankedPlan>& plans, double budget_usd_per_hour) {
  const RankedPlan* cheapest = nullptr;
  double cheapest_usd = 0;
  for (const RankedPlan& p : plans) {
    const double usd = plan_cost(p.plan, p.estimate).usd_per_hour;
    if (!cheapest || usd < cheapest_usd) {
      cheapest = &p;
      cheapest_usd = usd;
    }
  }
  if (cheapest && cheapest_usd > budget_usd_per_hour) {
    throw Error("", "--budget-usd-per-hour",
                "no plan found costs at most " + format_usd(budget_usd_per_hour) + " per hour",
                "the cheapest plan found (" + cheapest->label + ", " + std::to_string(cheapest->plan.stages.size()) +
                    " stage(s)) costs " + format_usd(cheapest_usd) +
                    " per hour: raise the budget to that, or exclude devices with a hints file (docs/hints.md)");
  }
  plans.erase(std::remove_if(plans.begin(), plans.end(),
                             [&](const RankedPlan& p) {
                               return plan_cost(p.plan, p.estimate).usd_per_hour > budget_usd_per_hour;
                             }),
              plans.end());
}

// Variants of the main search's best plan, simulated unless the cost model's bound already
// rules them out (at or above the plan they vary); those that fit join the ranking, which the
// cost model's step times decide: mixed tensor parallelism (its mixed-model groups give each
// device model its own tp, search_mixed_tp.h), and for an MoE plan the other expert layouts
// for every stage, then, on the fastest plan so far, for one device model's stages at a time
// (search_experts.h). Past `deadline` the rest are left out and `*timed_out` is set.
constexpr std::size_t kMixedTpVariants = 16;
constexpr std::size_t kExpertLayoutVariants = 16;

void add_variants_of_best(const CostModel& cost, const PlannerOptions& options, Clock::time_point deadline,
                          std::vector<RankedPlan>* ranked, bool* timed_out) {
  if (ranked->empty()) return;
  const auto add = [&](const RankedPlan& of, std::vector<Plan> variants,
                       const std::function<std::string(const Plan&)>& label) {
    // Evaluated only when the bound is below the varied plan's step time.
    const Seconds below_s = std::nextafter(of.estimate.step_time_s, 0.0);
    std::vector<RankedPlan> added;
    for (Plan& variant : variants) {
      if (*timed_out || planner_now(options) > deadline) {
        *timed_out = true;
        break;
      }
      BoundedEstimate run = cost.bound_and_evaluate(variant, below_s, EvaluateOptions{});
      if (!run.estimate || !run.estimate->fits) continue;
      std::string name = of.label + label(variant);
      added.push_back(RankedPlan{std::move(variant), std::move(*run.estimate), of.analytic_s, std::move(name)});
    }
    for (RankedPlan& p : added) ranked->push_back(std::move(p));
  };
  const RankedPlan best = ranked->front();
  add(best, mixed_tp_variants(best.plan, kMixedTpVariants), [](const Plan&) { return std::string(" mixed-tp"); });
  add(best, expert_layout_variants(best.plan, kExpertLayoutVariants), [](const Plan& p) {
    return " ep" + std::to_string(p.stages.front().ep) + " expert-tp" + std::to_string(p.stages.front().expert_tp_degree());
  });
  const RankedPlan fastest = *std::min_element(ranked->begin(), ranked->end(), [](const RankedPlan& a, const RankedPlan& b) {
    return a.estimate.step_time_s < b.estimate.step_time_s;
  });
  add(fastest, kind_expert_layout_variants(fastest.plan, kExpertLayoutVariants), [&](const Plan& p) {
    for (std::size_t s = 0; s < p.stages.size(); ++s) {
      const Stage& was = fastest.plan.stages[s];
      const Stage& now = p.stages[s];
      if (now.ep != was.ep || now.expert_tp_degree() != was.expert_tp_degree() || now.expert_counts != was.expert_counts)
        return " " + p.cluster.devices.at(now.devices.front()).model + " ep" + std::to_string(now.ep) + " expert-tp" +
               std::to_string(now.expert_tp_degree());
    }
    return std::string();
  });
}

}  // namespace

PlanResult search_plans(const Cluster& cluster, const Model& model, const CostModel& cost,
                        const PlannerOptions& options) {
  const auto wall_start = Clock::now();
  const auto start = planner_now(options);
  const auto deadline = options.time_limit_s > 0
                            ? start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(options.time_limit_s))
                            : Clock::time_point::max();
  if (cluster.devices.empty()) {
    throw Error(cluster.source_file, "nodes", "the cluster has no devices", "list at least one node with devices");
  }
  const Hints& hints = options.hints;
  check_hints(hints, cluster, model);
  const int batch = options.global_batch != 0 ? options.global_batch : model.training.global_batch;
  if (batch <= 0) {
    throw Error(model.source_file, "training.global_batch", "expected a positive global batch, got " + std::to_string(batch),
                "set training.global_batch or pass --global-batch");
  }
  SpaceLimits limits;
  limits.devices = usable_devices(hints, cluster);
  check_prices(cluster, limits.devices, options.objective == Objective::cost || options.budget_usd_per_hour,
               options.objective == Objective::cost ? "--objective cost" : "--budget-usd-per-hour");
  limits.max_pipeline_depth = hints.max_pipeline_depth;
  limits.fixed_stages = static_cast<int>(hints.stage_boundaries.size());
  limits.schedules = hints.schedules;

  EngineInput in;
  in.choices = [&](const Structure& s) { return enumerate_choices(s, model, batch, limits); };
  if (!hints.stage_boundaries.empty()) {
    in.rules.fixed_boundaries = hints.stage_boundaries;
    in.rules.fixed_boundaries.push_back(static_cast<int>(model.layers.size()));
  }
  in.hints = &hints;
  in.global_batch = batch;
  in.phase = "plan";
  in.uneven_experts = true;
  in.keep = options.top_k + 1;
  const std::vector<std::string> usable_models = models_of(cluster, limits.devices);
  const bool search_upper_bound_too = !upper_bound_is_own_best(usable_models, hints);
  PlannerOptions shared = options;
  std::mutex progress_mutex;
  if (options.progress) {
    shared.progress = [&](const Progress& p) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(p);
    };
  }
  // The main search, the baseline and the upper bound's per-model searches do not depend on
  // each other and each is deterministic: two threads take them in that order as they come
  // free, to the same deadline (one thread when a test's fake clock, PlannerOptions::clock_s,
  // need not be thread-safe). The main search, the longest, runs on this thread and the others
  // below its priority, so that beside the precision advice's search it keeps its core.
  EngineOutput eo;
  Comparison comparison;
  const std::vector<std::string> alone_models =
      options.compare && search_upper_bound_too ? upper_bound_models(cluster, shared) : std::vector<std::string>{};
  std::vector<double> alone(alone_models.size(), 0.0);
  std::vector<RankedPlan> alone_plans(alone_models.size());
  std::vector<std::function<void()>> tasks;
  tasks.push_back([&] {  // its device groupings too: the comparison needs none of them
    bool cut = false;
    in.structures = holding_structures(cluster, model, limits, options, deadline, &in.structures_left_out, &cut);
    if (in.structures->empty()) {
      throw Error(hints.source_file.empty() ? cluster.source_file : hints.source_file, "",
                  "no pipeline of device groups satisfies the limits (devices, pipeline depth, stage count)");
    }
    eo = run_engine(cluster, model, cost, in, shared, deadline);
    if (cut) eo.stats.timed_out = true;
  });
  if (options.compare) {
    tasks.push_back([&] {
      comparison.baseline = search_baseline(cluster, model, cost, comparison_options(shared, start),
                                            &comparison.baseline_found, &comparison.baseline_missing);
    });
  }
  for (std::size_t m = 0; m < alone_models.size(); ++m) {
    tasks.push_back([&, m] {
      bool found = false;
      alone_plans[m] = plan_model_alone(cluster, model, cost, comparison_options(shared, start), alone_models[m], &found);
      alone[m] = found ? alone_plans[m].estimate.samples_per_s : 0.0;
    });
  }
  run_tasks(tasks, side_by_side_threads(options), Helpers::lower_priority);
  // With three device models or more, the strongest few together (the weakest idle): a model
  // that adds little compute can still cost a pipeline stage, a slow link or a fallback
  // precision, and the main search uses every device. Under the throughput objective without a
  // budget, a subset whose upper bound (its models' throughputs alone, summed; HetHub's bound)
  // does not beat the fastest candidate so far is not searched.
  const std::vector<std::vector<std::string>> subsets = strongest_subsets(alone_models, alone);
  double fastest_so_far = eo.ranked.empty() ? 0.0 : eo.ranked.front().estimate.samples_per_s;
  if (comparison.baseline_found) fastest_so_far = std::max(fastest_so_far, comparison.baseline.estimate.samples_per_s);
  for (double a : alone) fastest_so_far = std::max(fastest_so_far, a);
  const bool prune_subsets = options.objective == Objective::throughput && !options.budget_usd_per_hour;
  std::vector<RankedPlan> subset_plans(subsets.size());
  std::vector<char> subset_found(subsets.size(), 0);
  tasks.clear();
  for (std::size_t i = 0; i < subsets.size(); ++i) {
    // A model with no plan alone (0) may still hold its part together with others: no bound.
    double bound = 0;
    bool bounded = true;
    for (const std::string& m : subsets[i]) {
      const double a = alone[std::find(alone_models.begin(), alone_models.end(), m) - alone_models.begin()];
      bounded = bounded && a > 0;
      bound += a;
    }
    if (prune_subsets && bounded && bound <= fastest_so_far) continue;
    tasks.push_back([&, i] {
      bool found = false;
      subset_plans[i] = plan_models_together(cluster, model, cost, comparison_options(shared, start), subsets[i], &found);
      subset_found[i] = found;
    });
  }
  run_tasks(tasks, side_by_side_threads(options), Helpers::lower_priority);
  comparison.searched_upper_bound = options.compare && search_upper_bound_too;
  if (comparison.searched_upper_bound) comparison.upper_bound = upper_bound_of(alone_models, alone);
  // Where the hints rule out every plan on all usable devices (`why`: how): the plan on fewer
  // of them, with its wall time, or nothing where none meets them or the option is off.
  const auto plan_fewer_for_hints = [&](const std::string& why) -> std::optional<PlanResult> {
    if (!options.idle_devices_for_hints) return std::nullopt;
    std::optional<PlanResult> fewer = search_fewer_for_hints(cluster, model, cost, options, start, limits.devices, why);
    if (fewer) fewer->stats.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
    return fewer;
  };
  if (eo.choices_total == 0) {
    int smallest_dp = 1 << 30;
    for (const Structure& s : *in.structures) smallest_dp = std::min(smallest_dp, s.max_dp());
    if (smallest_dp > batch) {
      PlanResult fewer = search_for_small_batch(cluster, model, cost, options, start, limits.devices, smallest_dp, batch);
      fewer.stats.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
      return fewer;
    }
    // Micro-batching is possible: the stage or schedule hints rule it out. 1f1b, gpipe and
    // zb-h1 run on every pipeline, so without stage boundaries the schedules left are
    // interleaved-1f1b or wave, which no pipeline of the usable devices can run at this batch.
    // Fewer devices may run them (fewer replicas, more micro-batches each).
    std::string allowed;
    for (ScheduleKind k : hints.schedules) allowed += std::string(allowed.empty() ? "" : ", ") + to_string(k);
    const std::string why =
        hints.stage_boundaries.empty()
            ? "no pipeline runs the hinted schedules (" + allowed + ") at the global batch of " +
                  std::to_string(batch) + " sample(s)"
            : "the hinted " + std::to_string(hints.stage_boundaries.size()) +
                  " stages cannot be laid on them with the allowed schedules";
    if (std::optional<PlanResult> fewer = plan_fewer_for_hints(why)) return std::move(*fewer);
    if (hints.stage_boundaries.empty()) {
      throw Error(hints.source_file, "schedules",
                  "a pipeline of the usable devices that runs " + allowed + " at the global batch of " +
                      std::to_string(batch) + " sample(s); none does",
                  "interleaved-1f1b and wave need 2 device groups or more with at least as many layers as "
                  "chunks in each, interleaved-1f1b also micro-batches in a multiple of the groups; allow 1f1b, "
                  "zb-h1 or gpipe too, or give a larger global batch");
    }
    throw Error(hints.source_file, "stage_boundaries",
                std::to_string(hints.stage_boundaries.size()) +
                    " stages cannot be laid on the usable devices with the allowed schedules",
                "allow interleaved-1f1b or wave, or give a stage count that divides the usable devices");
  }
  // The baseline's plan and each model's plan alone (and the strongest models together) are
  // candidates too, where they honour the hints (their searches honour only the exclusions).
  std::vector<RankedPlan> others;
  bool variants_cut = false;   // the time limit left variants of a best plan out
  const auto add_other = [&](const RankedPlan& p) {
    if (options.compare && plan_honours_hints(hints, p.plan)) others.push_back(p);
  };
  if (comparison.baseline_found) add_other(comparison.baseline);
  for (std::size_t m = 0; m < alone_models.size(); ++m) {
    if (alone[m] > 0) add_other(alone_plans[m]);
  }
  for (std::size_t i = 0; i < subsets.size(); ++i) {
    if (!subset_found[i]) continue;
    // The subset's search is the main search on fewer devices: its mixed-tp variants too.
    std::vector<RankedPlan> subset_ranked{subset_plans[i]};
    add_variants_of_best(cost, options, deadline, &subset_ranked, &variants_cut);
    for (const RankedPlan& p : subset_ranked) add_other(p);
  }
  if (eo.ranked.empty() && others.empty()) {
    bool hinted = false;
    for (long r : eo.rejected_by_hint) hinted = hinted || r > 0;
    if (hinted) {
      // Fewer devices may meet the layer hint (tp 1 at a batch that feeds fewer replicas).
      if (std::optional<PlanResult> fewer = plan_fewer_for_hints(
              "every plan that fits in memory breaks the hinted " + layer_hint_text(*first_rejecting_hint(hints, eo))))
        return std::move(*fewer);
      throw_hint(hints, eo);
    }
    if (eo.has_shortfall && !eo.any_fit) throw_memory(model, cluster, eo, batch);
    if (eo.has_simulated_shortfall) throw_simulated_memory(model, cluster, eo, batch);
    throw Error(model.source_file, "", "no plan fits in memory by the simulator's count",
                activation_remedies(model, batch));
  }

  PlanResult result;
  result.objective = options.objective;
  result.budget_usd_per_hour = options.budget_usd_per_hour;
  // The fastest plan kept of the main search that uses every device.
  const auto on_all = std::find_if(eo.ranked.begin(), eo.ranked.end(),
                                   [&](const RankedPlan& p) { return uses_every_device(p.plan, limits.devices); });
  bool all_devices_found = on_all != eo.ranked.end();
  const bool only_whole_replicas_kept = !eo.ranked.empty() && !all_devices_found;
  RankedPlan all_devices_best = all_devices_found ? *on_all : RankedPlan{};
  // The baseline honours only the hints' exclusions: it stands for every device where it
  // honours the rest too (a pipeline of 4 is no plan of `max_pipeline_depth: 1`).
  if (comparison.baseline_found && plan_honours_hints(hints, comparison.baseline.plan) &&
      (!all_devices_found || comparison.baseline.estimate.step_time_s <
                                                           all_devices_best.estimate.step_time_s)) {
    all_devices_best = comparison.baseline;
    all_devices_found = true;
  }
  result.ranked = std::move(eo.ranked);
  add_variants_of_best(cost, options, deadline, &result.ranked, &variants_cut);
  for (RankedPlan& o : others) result.ranked.push_back(std::move(o));
  // Fewer nodes, where the best plan so far leaves its devices mostly idle (16 nodes of GH200s
  // over 10 Gbps Ethernet, Llama-2 7B at 16 samples: 2 nodes train faster than the pipeline of
  // all 16). Not for the searches of a comparison (on the devices they were given), nor where
  // the batch starves the usable devices: the fed devices' search below makes its own.
  // The devices a batch too small to feed every usable device feeds (none where it feeds all).
  const std::optional<std::vector<int>> fed = fed_devices(cluster, model, limits.devices, batch);
  if (options.compare && !result.ranked.empty() && !fed) {
    const RankedPlan& best_so_far =
        *std::min_element(result.ranked.begin(), result.ranked.end(), [&](const RankedPlan& a, const RankedPlan& b) {
          return ranks_before(options.objective, a.plan, a.estimate, b.plan, b.estimate);
        });
    for (RankedPlan& p :
         search_fewer_nodes(cluster, model, cost, options, start, limits.devices, best_so_far, &variants_cut))
      result.ranked.push_back(std::move(p));
  }
  if (options.budget_usd_per_hour) {
    const double budget = *options.budget_usd_per_hour;
    // check_prices has made sure that every usable device has a price.
    const double usable_usd = price_per_hour_usd(cluster, limits.devices).value_or(0.0);
    // Where the usable devices together cost more than the budget, part of them may beat every
    // plan found within it, or be the only plans within it (under $100/h, 15 H100s at $6.50/h
    // where the searches on whole device models find 16 A100s at $4/h): search_within_budget's
    // best replaces the plans found where it ranks before the best of them within the budget.
    // (A relative 1e-12 keeps a subset that search_within_budget summed in another order from
    // searching within the budget again.)
    std::optional<PlanResult> within =
        usable_usd > budget * (1 + 1e-12) ? search_within_budget(cluster, model, cost, options, start, limits.devices)
                                          : std::nullopt;
    const RankedPlan* best_within = nullptr;
    for (const RankedPlan& p : result.ranked) {
      if (plan_cost(p.plan, p.estimate).usd_per_hour <= budget &&
          (!best_within || ranks_before(options.objective, p.plan, p.estimate, best_within->plan, best_within->estimate)))
        best_within = &p;
    }
    if (within && (!best_within || ranks_before(options.objective, within->best().plan, within->best().estimate,
                                                best_within->plan, best_within->estimate))) {
      within->stats.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
      return std::move(*within);
    }
    keep_within_budget(result.ranked, budget);  // throws, naming the cheapest plan, when none is within
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [&](const RankedPlan& a, const RankedPlan& b) {
    return ranks_before(options.objective, a.plan, a.estimate, b.plan, b.estimate);
  });
  if (static_cast<int>(result.ranked.size()) > in.keep) result.ranked.resize(in.keep);
  result.idle = idle_devices(cluster, limits.devices, result.best(), all_devices_found ? &all_devices_best : nullptr,
                             only_whole_replicas_kept, options);
  result.stats = eo.stats;
  result.stats.timed_out = result.stats.timed_out || variants_cut;
  result.stats.max_evaluations = options.max_evaluations;
  if (options.compare) {
    Comparison& c = comparison;
    result.baseline = std::move(c.baseline);
    result.baseline_found = c.baseline_found;
    result.baseline_missing = c.baseline_missing;
    result.upper_bound = c.searched_upper_bound ? std::move(c.upper_bound) : own_upper_bound(usable_models, result);
    result.has_comparison = true;
    result.baseline_devices = usable_devices(exclusions_only(hints), cluster);
    for (const auto& entry : result.upper_bound.per_model) {
      const std::string& m = entry.first;
      std::vector<int> devices;
      for (int d : result.baseline_devices) {
        if (cluster.devices[d].model == m) devices.push_back(d);
      }
      result.upper_bound.devices.push_back(devices);
    }
    const double best = result.best().estimate.samples_per_s;
    if (result.baseline_found) result.speedup_vs_baseline = best / result.baseline.estimate.samples_per_s;
    if (result.upper_bound.samples_per_s > 0) result.fraction_of_upper_bound = best / result.upper_bound.samples_per_s;
  }
  // A batch too small to feed every device: the plan on the devices it feeds replaces the
  // plans found where it ranks before them (the tiny Llama at 3 samples on cpu-local-8: tp 2 x
  // dp 3 on 6 CPUs, 25% faster than the best four-stage pipeline of all 8). Not for the
  // searches made for a comparison, which are on the devices they were given.
  if (options.compare && fed) {
    std::optional<PlanResult> on_fed =
        search_fed_devices(cluster, model, cost, options, start, limits.devices, batch, *fed);
    if (on_fed && ranks_before(options.objective, on_fed->best().plan, on_fed->best().estimate, result.best().plan,
                               result.best().estimate)) {
      on_fed->stats.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
      return std::move(*on_fed);
    }
  }
  result.stats.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
  return result;
}

}  // namespace whale::plan

// File: export_best.cpp
// Chooses the plan to export from a planner result: the best plan, or, constrained, the fastest
// plan the framework can express (the planner's plans, the uniform baseline searched within what
// the framework has, and each device model's uniform plan alone, each made expressible by
// expressible_variant), and its export text.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>

#include "export_layout.h"
#include "whale/plan/error.h"
#include "whale/plan/export.h"
#include "whale/plan/hints.h"
#include "whale/plan/objective.h"

namespace whale::plan {
namespace {

std::string throughput(const RankedPlan& ranked) {
  char text[96];
  std::snprintf(text, sizeof text, "%.2f samples/s (step %.3f s)", ranked.estimate.samples_per_s,
                ranked.estimate.step_time_s);
  return text;
}

// The planner's options for the uniform search of `framework`: DeepSpeed's config has no
// sequence parallelism, so its search leaves it out.
PlannerOptions framework_options(const PlannerOptions& options, Framework framework) {
  PlannerOptions out = options;
  out.progress = nullptr;
  if (framework == Framework::deepspeed) out.strategies.sequence_parallel = false;
  return out;
}

// The uniform structures whose layers `framework` can split: DeepSpeed places no stage
// boundaries (its partition methods balance layers), so its pipeline depth divides the
// transformer layers; Megatron-LM's first and last stages may differ (expressible_variant places
// its split).
std::function<bool(const Structure&)> splittable_by(const Model& model, Framework framework) {
  if (framework != Framework::deepspeed) return nullptr;
  const long blocks = std::count_if(model.layers.begin(), model.layers.end(),
                                    [](const Layer& l) { return l.kind == LayerKind::transformer; });
  return [blocks](const Structure& s) { return blocks % static_cast<long>(s.groups.size()) == 0; };
}

// At most this many device counts are tried for a uniform plan on fewer devices.
constexpr int kFewerDeviceCounts = 4;

// Where no uniform pipeline of every usable device fits (48 devices and 256 samples: no dp x tp
// x pp of 48 has a dp dividing 256; 12 A10s and a 30-layer model whose even split over 12
// stages overflows the stages of 3 layers, where 10 stages of 3 fit), the frameworks run one on
// fewer devices: the first of the placement order (memory, then speed), as many as a uniform
// pipeline can take (dp dividing the batch, tp a power of two splitting the layers up to a
// node's usable devices, pp up to the transformer layers), the kFewerDeviceCounts largest
// counts tried from the most down; the rest idle. False when none of them fits; `*tried` says
// whether any count was tried.
bool uniform_plan_on_fewer(const Cluster& cluster, const Model& model, const CostModel& cost,
                           const PlannerOptions& options, const std::function<bool(const Structure&)>& splittable,
                           RankedPlan* out, bool* tried) {
  *tried = false;
  Hints only_exclusion;
  only_exclusion.exclude_devices = options.hints.exclude_devices;
  const std::vector<int> usable = usable_devices(only_exclusion, cluster);
  const int batch = batch_of(model, options);
  const auto kept = [&](const Structure& s) { return !splittable || splittable(s); };
  const std::vector<int> degrees = tp_degrees(cluster, model, usable);
  const int blocks = static_cast<int>(std::count_if(model.layers.begin(), model.layers.end(),
                                                    [](const Layer& l) { return l.kind == LayerKind::transformer; }));
  std::set<int, std::greater<>> counts;
  for (int dp = 1; dp <= batch; ++dp) {
    if (batch % dp != 0) continue;
    for (int tp : degrees) {
      for (int pp = 1; pp <= std::max(1, blocks); ++pp) {
        Structure depth;   // of pp groups: whether the framework splits the layers so
        depth.groups.resize(pp);
        if (!kept(depth)) continue;
        const long n = static_cast<long>(dp) * tp * pp;
        if (n < static_cast<long>(usable.size())) counts.insert(static_cast<int>(n));
      }
    }
  }
  const std::vector<int> order =
      ordered_devices(cluster, usable, model.training.precision, model.training.framework_precision);
  int tries = 0;
  for (auto count = counts.begin(); count != counts.end() && tries < kFewerDeviceCounts; ++count, ++tries) {
    *tried = true;
    PlannerOptions fewer = options;
    fewer.hints.exclude_devices.assign(order.begin() + *count, order.end());
    fewer.hints.exclude_devices.insert(fewer.hints.exclude_devices.end(), only_exclusion.exclude_devices.begin(),
                                       only_exclusion.exclude_devices.end());
    std::sort(fewer.hints.exclude_devices.begin(), fewer.hints.exclude_devices.end());
    bool found = false;
    RankedPlan plan = search_baseline(cluster, model, cost, fewer, &found, nullptr, splittable);
    if (!found) continue;
    plan.label += " on " + std::to_string(*count) + " of the " + std::to_string(usable.size()) + " devices";
    *out = std::move(plan);
    return true;
  }
  return false;
}

// The best uniform plan of every usable device searched within what `framework` has (DeepSpeed:
// a pipeline depth that divides the transformer layers), or of fewer devices where none of
// every device fits; false when none fits, and `*missing` says why.
bool uniform_candidate(const PlanResult& result, const Cluster& cluster, const Model& model, const CostModel& cost,
                       const PlannerOptions& options, Framework framework, RankedPlan* out, std::string* missing) {
  bool found = result.has_comparison && result.baseline_found;
  *out = result.baseline;
  *missing = result.baseline_missing;
  const bool searched = result.has_comparison && !result.baseline_found;  // none fits, with any strategy
  // Only DeepSpeed's search differs from the planner's own baseline search.
  const bool own_search = framework == Framework::deepspeed && found && !export_limits(out->plan, framework).empty();
  const auto splittable = splittable_by(model, framework);
  if (!searched && (!found || own_search)) {
    *out = search_baseline(cluster, model, cost, framework_options(options, framework), &found, missing, splittable);
    if (!found && splittable) *missing = "of a pipeline depth that divides the transformer layers, " + *missing;
  }
  if (found) return true;
  bool tried = false;
  found = uniform_plan_on_fewer(cluster, model, cost, framework_options(options, framework), splittable, out, &tried);
  if (!found && tried) {
    *missing += ", nor does one fit on fewer devices (tried: the " + std::to_string(kFewerDeviceCounts) +
                " largest counts whose uniform pipelines divide it)";
  }
  return found;
}

// The best uniform plan of each device model's usable devices alone, the others idle, or of
// fewer of them where none of all fits, where the usable devices are of two models or more (a
// framework runs one model's devices as well as any), in cluster order.
std::vector<RankedPlan> uniform_plans_per_model(const Cluster& cluster, const Model& model, const CostModel& cost,
                                                const PlannerOptions& options, Framework framework) {
  const std::vector<int> usable = usable_devices(options.hints, cluster);
  std::vector<std::pair<std::string, std::vector<int>>> by_model;
  for (int d : usable) {
    const std::string& name = cluster.devices.at(d).model;
    auto it = std::find_if(by_model.begin(), by_model.end(), [&](const auto& m) { return m.first == name; });
    if (it == by_model.end()) by_model.push_back({name, {d}});
    else it->second.push_back(d);
  }
  std::vector<RankedPlan> out;
  if (by_model.size() < 2) return out;
  for (const auto& [name, devices] : by_model) {
    PlannerOptions alone = framework_options(options, framework);
    for (int d : usable) {
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) alone.hints.exclude_devices.push_back(d);
    }
    std::sort(alone.hints.exclude_devices.begin(), alone.hints.exclude_devices.end());
    bool found = false, tried = false;
    const auto splittable = splittable_by(model, framework);
    RankedPlan plan = search_baseline(cluster, model, cost, alone, &found, nullptr, splittable);
    const bool fewer = !found && uniform_plan_on_fewer(cluster, model, cost, alone, splittable, &plan, &tried);
    if (!found && !fewer) continue;
    plan.label += (fewer ? " of the " : " on the ") + name + " alone (devices " + format_device_list(devices) + ")";
    out.push_back(std::move(plan));
  }
  return out;
}

}  // namespace

ChosenExport choose_export(const PlanResult& result, const Cluster& cluster, const Model& model,
                           const CostModel& cost, const PlannerOptions& options, Framework framework,
                           bool constrained, const std::string& path) {
  const RankedPlan& best = result.best();
  const std::vector<std::string> limits = export_limits(best.plan, framework);
  if (limits.empty() || !constrained) {
    std::string text = export_text(best.plan, framework);  // throws, listing the limits, where there are any
    return {std::move(text), std::string(to_string(framework)) + " export of the best plan, " + throughput(best) +
                                 ": " + path + "\n" + export_precision_note(best.plan, framework)};
  }
  if (framework == Framework::deepspeed && model.moe) {
    // No plan of an MoE model is a DeepSpeed config: searching for a uniform one is moot, and
    // the best plan's other limits are beside the point.
    throw Error(path, export_option(framework),
                "a dense model (DeepSpeed's config describes dense layers; its MoE layers are built in the model "
                "code, deepspeed.moe), got the mixture-of-experts model '" + model.name + "'",
                "export the plan with --export-megatron (Megatron-Core's MoE arguments)");
  }
  if (model.family == "listed") {
    throw Error(path, export_option(framework),
                "a gpt, bert or llama model, got the listed model '" + model.name + "'", kListedModelHint);
  }
  // The candidates: the planner's plans, best first, the uniform plan of every device (or of
  // fewer) and each device model's alone; the first best by the objective within the budget,
  // where the result has one, is exported.
  std::vector<RankedPlan> candidates = result.ranked;
  RankedPlan uniform;
  std::string missing;
  if (uniform_candidate(result, cluster, model, cost, options, framework, &uniform, &missing)) {
    candidates.push_back(std::move(uniform));
    missing = "the uniform plans of every device do not fit once made so";
  } else {
    missing = "of the uniform plans of every device, " + missing;
  }
  for (RankedPlan& alone : uniform_plans_per_model(cluster, model, cost, options, framework)) {
    candidates.push_back(std::move(alone));
  }
  std::optional<RankedPlan> chosen;
  const auto within_budget = [&](const RankedPlan& p) {
    return !result.budget_usd_per_hour || plan_cost(p.plan, p.estimate).usd_per_hour <= *result.budget_usd_per_hour;
  };
  for (const RankedPlan& candidate : candidates) {
    std::optional<RankedPlan> variant = expressible_variant(candidate, cost, framework);
    if (!variant || !within_budget(*variant)) continue;
    if (!chosen || ranks_before(result.objective, variant->plan, variant->estimate, chosen->plan, chosen->estimate)) {
      chosen = std::move(variant);
    }
  }
  if (!chosen) {
    char budget[96] = "";
    if (result.budget_usd_per_hour) {
      std::snprintf(budget, sizeof budget, " within the budget of %.2f USD per hour", *result.budget_usd_per_hour);
    }
    throw Error(path, export_option(framework),
                std::string("a plan that ") + to_string(framework) + " can express and that fits" + budget +
                    ", got none: " + missing +
                    "; the planner's plans and each device model's uniform plan alone need what it lacks or do not "
                    "fit once made uniform",
                "the frameworks run the same dp x tp in every stage, an even layer split and even shares; the best "
                "plan needs what they lack (listed by whale-plan without --export-constrained)");
  }
  std::string out = std::string(to_string(framework)) + " cannot express the best plan:\n";
  for (const std::string& limit : limits) out += "  - " + limit + "\n";
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, " (%.1f%% of the best)",
                100.0 * chosen->estimate.samples_per_s / best.estimate.samples_per_s);
  out += "  best plan: " + throughput(best) + "\n  exported instead, the fastest plan it can express, " +
         chosen->label + ": " + throughput(*chosen) + ratio + ": " + path + "\n";
  return {export_text(chosen->plan, framework), out + export_precision_note(chosen->plan, framework)};
}

}  // namespace whale::plan

// File: export_best.cpp
// Chooses the plan to export from a planner result: the best plan, or, constrained, the best
// plan the framework can express (the uniform baseline, searched within what the framework
// has), and its export text.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

#include "export_layout.h"
#include "whale/plan/error.h"
#include "whale/plan/export.h"

namespace whale::plan {
namespace {

std::string throughput(const RankedPlan& ranked) {
  char text[96];
  std::snprintf(text, sizeof text, "%.2f samples/s (step %.3f s)", ranked.estimate.samples_per_s,
                ranked.estimate.step_time_s);
  return text;
}

std::string joined(const std::vector<std::string>& limits) {
  std::string all;
  for (const std::string& limit : limits) all += (all.empty() ? "" : "; ") + limit;
  return all;
}

// The planner's options for the uniform search of `framework`: DeepSpeed's config has no
// sequence parallelism, so its search leaves it out.
PlannerOptions framework_options(const PlannerOptions& options, Framework framework) {
  PlannerOptions out = options;
  out.progress = nullptr;
  if (framework == Framework::deepspeed) out.strategies.sequence_parallel = false;
  return out;
}

// DeepSpeed checkpoints whole layers: selective recomputation becomes full, which keeps no more
// memory and costs more time; the plan is estimated again. False when it then does not fit.
bool full_recomputation(RankedPlan* ranked, const CostModel& cost) {
  bool changed = false;
  for (Stage& stage : ranked->plan.stages) {
    if (stage.recompute != Recompute::selective) continue;
    stage.recompute = Recompute::full;
    changed = true;
  }
  if (!changed) return true;
  ranked->estimate = cost.evaluate(ranked->plan, EvaluateOptions{});
  ranked->label += " with full recomputation";
  return ranked->estimate.fits;
}

// Megatron-LM splits the transformer layers evenly but for its first and last stages: the
// boundaries moved so that every middle stage holds m = floor or ceil of blocks / stages (the
// one with the smaller largest stage), the first and the last the rest; estimated again. True
// when the split was expressible already or the new one fits.
bool megatron_layer_split(RankedPlan* ranked, const CostModel& cost) {
  Plan& plan = ranked->plan;
  const int p = static_cast<int>(plan.stages.size());
  std::vector<int> body;  // the transformer layers, by index
  for (int i = 0; i < static_cast<int>(plan.model.layers.size()); ++i) {
    if (plan.model.layers[i].kind == LayerKind::transformer) body.push_back(i);
  }
  const int blocks = static_cast<int>(body.size());
  if (p < 3 || plan.schedule.chunks != 1 || blocks < p) return true;
  std::vector<int> best;
  for (const int m : {blocks / p, (blocks + p - 1) / p}) {
    const int rest = blocks - (p - 2) * m;
    if (m < 1 || rest < 2) continue;
    std::vector<int> counts(p, m);
    counts.front() = rest / 2;
    counts.back() = rest - rest / 2;
    if (best.empty() || *std::max_element(counts.begin(), counts.end()) < *std::max_element(best.begin(), best.end()))
      best = counts;
  }
  if (best.empty()) return false;
  std::vector<int> starts(1, 0);
  for (int s = 1, taken = 0; s < p; ++s) starts.push_back(body[taken += best[s - 1]]);
  starts.push_back(static_cast<int>(plan.model.layers.size()));
  bool moved = false;
  for (int s = 0; s < p; ++s) {
    moved = moved || plan.stages[s].first_layer != starts[s];
    plan.stages[s].first_layer = starts[s];
    plan.stages[s].end_layer = starts[s + 1];
  }
  if (!moved) return true;
  ranked->estimate = cost.evaluate(plan, EvaluateOptions{});
  ranked->label += " with layers split first " + std::to_string(best.front()) + ", middle " +
                   std::to_string(best[1]) + ", last " + std::to_string(best.back());
  return ranked->estimate.fits;
}

// A framework sets one expert layout for all stages (Megatron-Core's --expert-model-parallel-size
// and --expert-tensor-parallel-size): where a uniform plan's stages chose different (ep,
// expert_tp) for their nodes, every stage takes the least sharded of them (its expert groups stay
// inside the nodes where the others' did; every stage has the same dp x tp, so it is valid for
// all); estimated again. True when the layout was one already or the new plan fits.
bool uniform_expert_layout(RankedPlan* ranked, const CostModel& cost) {
  Plan& plan = ranked->plan;
  if (!plan.model.moe || plan.stages.empty()) return true;
  const Stage* least = &plan.stages.front();
  bool differ = false;
  for (const Stage& stage : plan.stages) {
    differ = differ || stage.ep != least->ep || stage.expert_tp_degree() != least->expert_tp_degree() ||
             !stage.expert_counts.empty();
    if (stage.ep * stage.expert_tp_degree() < least->ep * least->expert_tp_degree()) least = &stage;
  }
  if (!differ) return true;
  const int ep = least->ep, expert_tp = least->expert_tp_degree();
  for (Stage& stage : plan.stages) {
    stage.ep = ep;
    stage.expert_tp = expert_tp;
    stage.expert_counts.clear();  // the frameworks split the experts evenly
  }
  ranked->estimate = cost.evaluate(plan, EvaluateOptions{});
  ranked->label += " with ep " + std::to_string(ep) + " x expert_tp " + std::to_string(expert_tp) +
                   " in every stage";
  return ranked->estimate.fits;
}

// The uniform structures whose layers `framework` can split: DeepSpeed places no stage
// boundaries (its partition methods balance layers), so its pipeline depth divides the
// transformer layers; Megatron-LM's first and last stages may differ (megatron_layer_split).
std::function<bool(const Structure&)> splittable_by(const Model& model, Framework framework) {
  if (framework != Framework::deepspeed) return nullptr;
  const long blocks = std::count_if(model.layers.begin(), model.layers.end(),
                                    [](const Layer& l) { return l.kind == LayerKind::transformer; });
  return [blocks](const Structure& s) { return blocks % static_cast<long>(s.groups.size()) == 0; };
}

// At most this many device counts are tried for a uniform plan on fewer devices.
constexpr int kFewerDeviceCounts = 4;

// Where no uniform pipeline of every usable device divides the global batch (48 devices and 256
// samples: no dp x tp x pp of 48 has a dp dividing 256), the frameworks run one on fewer
// devices: the first of the placement order (memory, then speed), as many as a uniform pipeline
// can take (dp dividing the batch, tp a power of two splitting the layers up to a node's usable
// devices, pp up to the transformer layers), the kFewerDeviceCounts largest counts tried from
// the most down; the rest idle. False when none of them fits; `*tried` says whether any count
// was tried (none where a uniform pipeline of every device divides the batch).
bool uniform_plan_on_fewer(const Cluster& cluster, const Model& model, const CostModel& cost,
                           const PlannerOptions& options, const std::function<bool(const Structure&)>& splittable,
                           RankedPlan* out, bool* tried) {
  *tried = false;
  Hints only_exclusion;
  only_exclusion.exclude_devices = options.hints.exclude_devices;
  const std::vector<int> usable = usable_devices(only_exclusion, cluster);
  const int batch = batch_of(model, options);
  const auto kept = [&](const Structure& s) { return !splittable || splittable(s); };
  for (const Structure& s : uniform_structures(cluster, model, usable)) {
    if (kept(s) && batch % s.groups.front()->dp() == 0) return false;   // one of all of them divides it
  }
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

// The best uniform plan that `framework` can express; false when none fits, and `*missing`
// says why.
bool expressible_uniform_plan(const PlanResult& result, const Cluster& cluster, const Model& model,
                              const CostModel& cost, const PlannerOptions& options, Framework framework,
                              RankedPlan* out, std::string* missing) {
  bool found = result.has_comparison && result.baseline_found;
  *out = result.baseline;
  *missing = result.baseline_missing;
  const bool searched = result.has_comparison && !result.baseline_found;  // none fits, with any strategy
  // Only DeepSpeed's search differs from the planner's own baseline search.
  const bool own_search = framework == Framework::deepspeed && found && !export_limits(out->plan, framework).empty();
  if (!searched && (!found || own_search)) {
    const auto splittable = splittable_by(model, framework);
    *out = search_baseline(cluster, model, cost, framework_options(options, framework), &found, missing, splittable);
    if (!found && splittable) *missing = "of a pipeline depth that divides the transformer layers, " + *missing;
  }
  if (!found) {
    const auto splittable = splittable_by(model, framework);
    bool tried = false;
    found = uniform_plan_on_fewer(cluster, model, cost, framework_options(options, framework), splittable, out, &tried);
    if (!found && tried) {
      *missing += ", nor does one fit on fewer devices (tried: the " + std::to_string(kFewerDeviceCounts) +
                  " largest counts whose uniform pipelines divide it)";
    }
  }
  if (!found) return false;
  if (framework == Framework::megatron && !export_limits(out->plan, framework).empty()) {
    RankedPlan split = *out;
    if (megatron_layer_split(&split, cost)) *out = split;
    RankedPlan experts = *out;
    if (uniform_expert_layout(&experts, cost)) *out = experts;
  }
  if (framework != Framework::deepspeed || full_recomputation(out, cost)) return true;
  *missing = "the best (" + out->label + ") fits only with selective recomputation, which DeepSpeed lacks";
  return false;
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
  RankedPlan chosen;
  std::string missing;
  if (!expressible_uniform_plan(result, cluster, model, cost, options, framework, &chosen, &missing)) {
    throw Error(path, export_option(framework),
                std::string("a uniform plan that ") + to_string(framework) + " can express and that fits, got none: " +
                    missing,
                "a uniform plan has the same dp x tp in every stage, an even layer split and even shares; the "
                "best plan needs what the framework lacks (listed by whale-plan without --export-constrained)");
  }
  const std::vector<std::string> left = export_limits(chosen.plan, framework);
  if (!left.empty()) {
    throw Error(path, export_option(framework),
                std::string("a uniform plan that ") + to_string(framework) + " can express, but the best uniform plan " +
                    chosen.label + " still has: " + joined(left),
                chosen.plan.model.family == "listed" ? kListedModelHint : "the best uniform plan that fits needs it");
  }
  std::string out = std::string(to_string(framework)) + " cannot express the best plan:\n";
  for (const std::string& limit : limits) out += "  - " + limit + "\n";
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, " (%.1f%% of the best)",
                100.0 * chosen.estimate.samples_per_s / best.estimate.samples_per_s);
  out += "  best plan: " + throughput(best) + "\n  exported instead, the best uniform plan " + chosen.label +
         ": " + throughput(chosen) + ratio + ": " + path + "\n";
  return {export_text(chosen.plan, framework), out + export_precision_note(chosen.plan, framework)};
}

}  // namespace whale::plan

// File: planner_report.cpp
// The planner's outputs for people (text) and programs (JSON): the plan in words, the
// alternatives, the baseline / upper-bound comparison and the search figures. Deterministic
// apart from the measured wall time.
#include <cstdio>
#include <sstream>

#include "whale/plan/planner.h"
#include "whale/plan/json_text.h"
#include "whale/plan/stage_text.h"

namespace whale::plan {
namespace {

std::string num(double x, const char* fmt = "%.9g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string schedule_text(const Plan& plan) {
  std::string s = to_string(plan.schedule.kind);
  if (plan.schedule.chunks > 1) s += " (" + std::to_string(plan.schedule.chunks) + " chunks)";
  return s;
}

// ", $X/h, $Y per 1M tokens" where the plan's devices have prices, else "".
std::string cost_text(const RankedPlan& r) {
  const PlanCost c = plan_cost(r.plan, r.estimate);
  if (!c.priced) return "";
  return ", " + format_usd(c.usd_per_hour) + "/h, " + format_usd(c.usd_per_million_tokens) + " per 1M tokens";
}

// After "best plan is 1.234": "x faster", or, for a best plan slower than the baseline (the
// baseline is a candidate of every unhinted, uncut throughput search), its speed and why.
std::string speedup_words(const PlanResult& r) {
  if (r.speedup_vs_baseline >= 1) return "x faster";
  if (r.objective == Objective::cost) return "x its speed (slower: ranked by cost per token)";
  if (r.budget_usd_per_hour) return "x its speed (slower: held to the budget)";
  return "x its speed (slower: held to the hints or cut by the time limit)";
}

std::string plan_json(const RankedPlan& r) {
  const Plan& p = r.plan;
  const PlanCost c = plan_cost(p, r.estimate);
  std::ostringstream o;
  o << "{\"label\": " << json_quote(r.label) << ", \"schedule\": " << json_quote(to_string(p.schedule.kind))
    << ", \"chunks\": " << p.schedule.chunks << ", \"micro_batch_size\": " << p.micro_batch_size
    << ", \"micro_batches\": " << p.micro_batches << ", \"step_time_s\": " << num(r.estimate.step_time_s)
    << ", \"samples_per_s\": " << num(r.estimate.samples_per_s) << ", \"tokens_per_s\": " << num(r.estimate.tokens_per_s)
    << ", \"usd_per_hour\": " << (c.priced ? num(c.usd_per_hour) : "null")
    << ", \"usd_per_million_tokens\": " << (c.priced ? num(c.usd_per_million_tokens) : "null")
    << ", \"mfu\": " << num(r.estimate.mfu) << ", \"analytic_step_time_s\": " << num(r.analytic_s) << ", \"stages\": [";
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const Stage& s = p.stages[i];
    o << (i ? ", " : "") << "{\"layers\": [" << s.first_layer << ", " << s.end_layer - 1 << "], \"devices\": "
      << json_quote(format_device_list(s.devices)) << ", \"device_models\": " << json_quote(stage_device_models(p, s))
      << ", \"dp\": " << s.dp() << ", \"tp\": " << s.tp
      << (s.mixed_tp() ? ", \"replica_tp\": [" + join_ints(s.replica_tps) + "]" : "") << ", \"shares\": [" << join_ints(s.shares)
      << "], \"recompute\": " << json_quote(to_string(s.recompute))
      << ", \"shard_optimizer\": " << (s.shard_optimizer ? "true" : "false")
      << ", \"shard_gradients\": " << (s.shard_gradients ? "true" : "false")
      << ", \"sequence_parallel\": " << (s.sequence_parallel ? "true" : "false") << "}";
  }
  o << "]}";
  return o.str();
}

}  // namespace

std::string describe_plan(const Plan& plan) {
  std::ostringstream o;
  o << plan.stages.size() << " stage(s) on " << plan.pipeline_groups() << " device group(s), schedule "
    << schedule_text(plan) << ", " << plan.micro_batches << " micro-batches of " << plan.micro_batch_size
    << " samples, " << to_string(plan.precision) << "\n";
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& s = plan.stages[i];
    o << "  stage " << i << ": layers " << s.first_layer << "-" << s.end_layer - 1 << " ("
      << s.end_layer - s.first_layer << ") on devices " << format_device_list(s.devices) << " ("
      << stage_device_models(plan, s) << "), dp " << s.dp() << (s.mixed_tp() ? " at tp " : " x tp ")
      << stage_tp_text(s) << ", shares " << shares_text(s.shares) << ", recompute " << to_string(s.recompute) << ", optimizer "
      << (s.shard_gradients ? "and gradients sharded" : s.shard_optimizer ? "sharded" : "replicated")
      << (s.sequence_parallel ? ", sequence-parallel" : "")
      << (plan.model.moe ? ", experts ep " + std::to_string(s.ep) + " x expert_tp " + std::to_string(s.expert_tp_degree()) : "")
      << (s.expert_counts.empty() ? "" : ", expert counts [" + join_ints(s.expert_counts) + "]")
      << "\n";
  }
  return o.str();
}

std::string format_planner_text(const PlanResult& r) {
  std::ostringstream o;
  if (r.objective == Objective::cost || r.budget_usd_per_hour) {
    o << "objective: " << to_string(r.objective);
    if (r.objective == Objective::cost) o << " (USD per 1M tokens, counting the devices each plan uses)";
    if (r.budget_usd_per_hour) o << ", budget " << format_usd(*r.budget_usd_per_hour) << " per hour";
    o << "\n";
  }
  for (const IdleDevices& idle : r.idle) {
    o << "idle: devices " << format_device_list(idle.devices) << " (" << idle.device_model << "): " << idle.reason
      << "\n";
  }
  if (r.ranked.size() > 1) {
    o << "alternatives:\n";
    for (size_t i = 1; i < r.ranked.size(); ++i) {
      const RankedPlan& a = r.ranked[i];
      o << "  #" << i + 1 << " " << num(a.estimate.samples_per_s, "%.4g") << " samples/s, step "
        << num(a.estimate.step_time_s, "%.4g") << " s" << cost_text(a) << ": " << a.label << ", " << schedule_text(a.plan) << ", "
        << a.plan.micro_batches << " x " << a.plan.micro_batch_size << ", " << a.plan.stages.size() << " stage(s)\n";
    }
  }
  if (r.has_comparison) {
    const double best = r.best().estimate.samples_per_s;
    o << "comparison:\n";
    const std::string baseline_devices = "devices " + format_device_list(r.baseline_devices);
    if (r.baseline_found) {
      o << "  baseline (heterogeneity-unaware " << r.baseline.label << " on " << baseline_devices << ", "
        << r.baseline.plan.micro_batches << " x " << r.baseline.plan.micro_batch_size
        << "): " << num(r.baseline.estimate.samples_per_s, "%.4g") << " samples/s" << cost_text(r.baseline)
        << "; best plan is " << num(r.speedup_vs_baseline, "%.3f")
        << speedup_words(r);
      const PlanCost base = plan_cost(r.baseline.plan, r.baseline.estimate);
      const PlanCost best_cost = plan_cost(r.best().plan, r.best().estimate);
      if (base.priced && best_cost.priced) {
        o << ", " << num(best_cost.usd_per_million_tokens / base.usd_per_million_tokens, "%.3f") << "x the cost per token";
      }
      o << "\n";
    } else {
      o << "  baseline: no uniform plan on " << baseline_devices << ": " << r.baseline_missing << "\n";
    }
    o << "  upper bound (HetHub: each device model alone";
    for (size_t i = 0; i < r.upper_bound.per_model.size(); ++i) {
      const auto& m = r.upper_bound.per_model[i];
      o << ", " << m.first;
      if (i < r.upper_bound.devices.size()) o << " on devices " << format_device_list(r.upper_bound.devices[i]);
      o << " " << (m.second > 0 ? num(m.second, "%.4g") : std::string("(no plan fits)"));
    }
    if (r.upper_bound.absent()) {
      o << "): absent: no device model alone can hold the model (best plan: " << num(best, "%.4g")
        << " samples/s)\n";
    } else {
      o << "): " << num(r.upper_bound.samples_per_s, "%.4g") << " samples/s; best plan reaches "
        << num(100.0 * r.fraction_of_upper_bound, "%.1f") << "% of it (" << num(best, "%.4g") << " samples/s)";
      // The sum bounds a plan only where each model alone runs as fast as its devices can.
      if (r.fraction_of_upper_bound > 1)
        o << ": above it, so no bound here (a device model alone is held back, by its memory, by a slow network "
             "between its nodes or by a cut search, more than beside the others)";
      o << "\n";
    }
  }
  o << "search: " << r.stats.candidates_evaluated << " layouts considered, " << r.stats.candidates_bounded
    << " bounded away, " << r.stats.candidates_simulated << " simulated, " << r.stats.structures << " device-group pipelines (" << r.stats.structures_pruned
    << " pruned), " << num(r.stats.wall_s, "%.3f") << " s" << (r.stats.timed_out ? " (time limit reached)" : "")
    << "\n";
  if (r.stats.timed_out) {
    o << "search cut: the time limit ended the search; the best plan is the best found so far\n";
  } else if (r.stats.capped) {
    o << "search cut: at most " << r.stats.max_evaluations
      << " layouts a round (--max-evaluations) were laid out, in order of their bounds; the best plan is the best "
         "found so far\n";
  }
  return o.str();
}

std::string format_planner_json(const PlanResult& r) {
  std::ostringstream o;
  o << "{\"objective\": " << json_quote(to_string(r.objective)) << ", \"budget_usd_per_hour\": "
    << (r.budget_usd_per_hour ? num(*r.budget_usd_per_hour) : "null");
  o << ", \"best\": " << plan_json(r.best()) << ", \"alternatives\": [";
  for (size_t i = 1; i < r.ranked.size(); ++i) o << (i > 1 ? ", " : "") << plan_json(r.ranked[i]);
  o << "], \"baseline\": ";
  if (r.baseline_found) {
    o << plan_json(r.baseline);
  } else {
    o << "{\"samples_per_s\": 0, \"usd_per_hour\": null, \"usd_per_million_tokens\": null, \"found\": false, "
         "\"reason\": "
      << json_quote(r.baseline_missing) << "}";
  }
  o << ", \"idle\": [";
  for (size_t i = 0; i < r.idle.size(); ++i) {
    o << (i ? ", " : "") << "{\"device_model\": " << json_quote(r.idle[i].device_model)
      << ", \"devices\": " << json_quote(format_device_list(r.idle[i].devices))
      << ", \"reason\": " << json_quote(r.idle[i].reason) << "}";
  }
  o << "], \"baseline_devices\": " << json_quote(format_device_list(r.baseline_devices));
  o << ", \"upper_bound\": {\"found\": " << (r.upper_bound.absent() ? "false" : "true")
    << ", \"samples_per_s\": " << num(r.upper_bound.samples_per_s) << ", \"per_model\": {";
  for (size_t i = 0; i < r.upper_bound.per_model.size(); ++i) {
    o << (i ? ", " : "") << json_quote(r.upper_bound.per_model[i].first) << ": " << num(r.upper_bound.per_model[i].second);
  }
  o << "}}, \"speedup_vs_baseline\": " << num(r.speedup_vs_baseline)
    << ", \"fraction_of_upper_bound\": " << num(r.fraction_of_upper_bound)
    << ", \"device_models\": " << json_string_list(r.best().plan.cluster.device_models())
    << ", \"gemm_precision_notes\": " << json_string_list(gemm_precision_notes(r.best().plan))
    << ", \"search\": {\"candidates_evaluated\": " << r.stats.candidates_evaluated
    << ", \"candidates_bounded\": " << r.stats.candidates_bounded
    << ", \"candidates_simulated\": " << r.stats.candidates_simulated << ", \"structures\": " << r.stats.structures
    << ", \"wall_s\": " << num(r.stats.wall_s) << ", \"timed_out\": " << (r.stats.timed_out ? "true" : "false")
    << ", \"capped\": " << (r.stats.capped ? "true" : "false")
    << "}}\n";
  return o.str();
}

}  // namespace whale::plan

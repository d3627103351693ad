// File: export_best.cpp
// Chooses the plan to export from a planner result: the best plan, or, constrained, the best
// plan the framework can express (the uniform baseline), and writes the export file.
#include <cstdio>

#include "export_layout.h"
#include "whale/plan/atomic_file.h"
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

}  // namespace

std::string export_best(const PlanResult& result, const Cluster& cluster, const Model& model,
                        const CostModel& cost, const PlannerOptions& options, Framework framework,
                        bool constrained, const std::string& path) {
  const RankedPlan& best = result.best();
  const std::vector<std::string> limits = export_limits(best.plan, framework);
  if (limits.empty() || !constrained) {
    write_file_atomically(path, export_text(best.plan, framework), export_option(framework));
    return std::string(to_string(framework)) + " export of the best plan, " + throughput(best) + ": " + path + "\n";
  }
  RankedPlan baseline = result.baseline;
  bool found = result.baseline_found;
  if (!result.has_comparison) baseline = search_baseline(cluster, model, cost, options, &found);
  if (!found) {
    throw Error(path, "", std::string("a uniform plan that ") + to_string(framework) + " can express and that fits",
                "the best plan needs what the framework lacks; export it without --export-constrained to see why");
  }
  write_file_atomically(path, export_text(baseline.plan, framework), export_option(framework));
  std::string out = std::string(to_string(framework)) + " cannot express the best plan:\n";
  for (const std::string& limit : limits) out += "  - " + limit + "\n";
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, " (%.1f%% of the best)",
                100.0 * baseline.estimate.samples_per_s / best.estimate.samples_per_s);
  out += "  best plan: " + throughput(best) + "\n  exported instead, the best uniform plan " + baseline.label +
         ": " + throughput(baseline) + ratio + ": " + path + "\n";
  return out;
}

}  // namespace whale::plan

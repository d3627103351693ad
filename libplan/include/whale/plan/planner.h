// File: planner.h
// The planner: searches the space of search_space.h for the fastest plan of a model on a
// cluster, honouring hints, and compares it with the heterogeneity-unaware baseline and
// HetHub's upper bound. It ranks through a CostModel (the simulator) it is handed.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "whale/plan/cost_model.h"
#include "whale/plan/hints.h"
#include "whale/plan/objective.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_estimate.h"
#include "whale/plan/search_space.h"

namespace whale::plan {

class StructureCache;   // structure_cache.h
class SubsetSearchCache;   // subset_search_cache.h

/// A progress report, given to PlannerOptions::progress now and then.
struct Progress {
  std::string phase;          // "search", "simulate", "baseline", "upper bound <model>"
  long done = 0;
  long total = 0;
  double best_samples_per_s = 0;
  long layouts_considered = 0;   // of this phase so far: layouts built
  long bounded_away = 0;         // skipped by the cost model's bound
  long simulated = 0;            // simulator calls
};

struct PlannerOptions {
  int global_batch = 0;        // 0: the model's training.global_batch
  Hints hints;
  int top_k = 3;               // alternatives kept besides the best
  double time_limit_s = 0;     // 0: none; when reached, the best plan found so far is returned
  /// The clock the time limit is measured on, in s from any origin; empty: steady_clock.
  /// A seam for tests (a fake clock makes the time limit deterministic); called from
  /// the simulating threads, so it must be thread-safe when threads > 1.
  std::function<double()> clock_s;
  /// Candidates ranked by the simulator, the best by the analytic estimate; 0 chooses
  /// automatically. Spaces with at most `exhaustive_below` candidates are simulated whole.
  int simulate_budget = 0;
  int exhaustive_below = 400;
  /// Layouts built per round of a search at most once one fits (the items with the lowest
  /// bounds first): keeps huge spaces (1024 devices of 3 models) within seconds. A round whose
  /// candidates all overflow in the simulator is followed by another over the next items, so
  /// the cap never turns a space with a fitting plan into "no plan fits". 0 = no cap: the
  /// complete search, which orders and prunes by the memory verdict and bounds of
  /// StructureFigures::memory_bound_s.
  long max_evaluations = 5000;
  /// Where no candidate of a search fits and all those left are refused by the memory verdict,
  /// the layouts made at most to find the closest shortfall that a "does not fit" error names
  /// (the least micro-batch sizes first); the search is complete without them. 0 = no cap.
  long shortfall_layouts = 2048;
  /// Skip the simulation of a candidate whose CostModel::bound exceeds the step time of the
  /// (top_k + 1)-th best plan simulated so far: the result stays that of simulating every
  /// candidate. Off: every candidate reaches the simulator (the reference in tests).
  bool prune_with_bound = true;
  int threads = 1;             // simulator calls in parallel (the CostModel must be const-safe)
  bool compare = true;         // also find the baseline and the upper bound
  /// Where the hints rule out every plan on all usable devices, also search fewer of them and
  /// return the best plan found there, the rest listed idle (planner_fewer_devices.h).
  bool idle_devices_for_hints = true;
  /// What the best plan is best at (objective.h). Under cost every usable device needs a price.
  Objective objective = Objective::throughput;
  /// When set, plans whose used devices cost more per hour (USD) are rejected; every usable
  /// device needs a price.
  std::optional<double> budget_usd_per_hour;
  /// Strategies beyond what whale-run executes (sequence parallelism, ZeRO-2); whale-plan's
  /// --runnable turns them off (runnable_strategies()).
  SearchStrategies strategies;
  std::function<void(const Progress&)> progress;
  /// When set, the searches made with these options (and copies of them) share their
  /// structures through it (structure_cache.h): same results, less work for a command that
  /// searches the same cluster and model again (at other batches, in another precision).
  std::shared_ptr<StructureCache> structure_cache;
  /// When set, the searches over some device models' devices alone made with these options
  /// (plan_models_together) keep their best plans in it (subset_search_cache.h): a later ask
  /// of the same search, or of the same search in a precision those devices price alike
  /// (the precision advice's), takes the kept plan.
  std::shared_ptr<SubsetSearchCache> subset_cache;
};

/// Threads for the searches one command runs side by side (run_tasks): two, or one where a
/// test's fake clock (clock_s) is set with threads == 1 and so need not be thread-safe.
inline int side_by_side_threads(const PlannerOptions& options) {
  return !options.clock_s || options.threads > 1 ? 2 : 1;
}

/// One simulated plan.
struct RankedPlan {
  Plan plan;
  Estimate estimate;
  Seconds analytic_s = 0;     // the planner's quick estimate, for reference
  std::string label;          // how its structure was built, e.g. "p2 tp[a100:1,v100:1]"
};

struct SearchStats {
  long structures = 0;             // pipelines of device groups considered
  long structures_pruned = 0;      // skipped by the analytic bound
  long candidates_evaluated = 0;   // layouts built and estimated analytically
  long candidates_bounded = 0;     // fitting candidates skipped by the cost model's bound
  long candidates_simulated = 0;   // simulator calls
  Seconds wall_s = 0;
  bool timed_out = false;
  bool capped = false;             // a round stopped at max_evaluations (its layouts per round)
  long rounds = 0;                 // rounds after one whose candidates all overflowed in the simulator
  long max_evaluations = 0;        // the cap a round ran under (PlannerOptions::max_evaluations)
};

/// HetHub's upper bound: the sum over device models of the best throughput of that model's
/// devices planned alone (a homogeneous cluster). A model on which no plan fits alone adds 0;
/// when none fits alone the bound is absent (samples_per_s 0).
struct UpperBound {
  double samples_per_s = 0;
  std::vector<std::pair<std::string, double>> per_model;   // in cluster order
  std::vector<std::vector<int>> devices;                   // per model: the usable devices it plans
  bool absent() const { return samples_per_s <= 0; }
};

/// Usable devices the best plan leaves idle, one entry per device model, and why.
struct IdleDevices {
  std::string device_model;
  std::vector<int> devices;
  std::string reason;   // e.g. "every plan found that uses them is slower (best: 3.2 samples/s)"
};

struct PlanResult {
  Objective objective = Objective::throughput;   // what `ranked` is ordered by (PlannerOptions)
  std::optional<double> budget_usd_per_hour;     // the budget the plans were held to, if any
  std::vector<RankedPlan> ranked;     // best first: the best plan, then up to top_k alternatives
  SearchStats stats;                  // of the main search
  bool has_comparison = false;
  RankedPlan baseline;                // the best uniform, heterogeneity-unaware plan
  bool baseline_found = false;
  std::string baseline_missing;       // why none was found: "none fits in memory", ...
  UpperBound upper_bound;
  double speedup_vs_baseline = 0;     // best / baseline samples per second
  double fraction_of_upper_bound = 0; // best / upper bound samples per second; 0 when absent
  std::vector<int> baseline_devices;  // the devices the baseline runs on (all usable ones)
  /// Usable devices the best plan leaves out. The best plan is the fastest of the main search's
  /// plans (every usable device), the baseline's and, with a comparison, each device model's
  /// plan alone (the upper bound's searches) and the strongest models' together, so it may
  /// leave devices idle.
  std::vector<IdleDevices> idle;

  const RankedPlan& best() const { return ranked.front(); }
};

/// Searches for the best plan by options.objective; with options.compare, the baseline's plan,
/// each device model's plan alone and, with three device models or more, the plans of the
/// strongest ones together (strongest_subsets) are candidates too, so the best is never slower (under
/// cost: never dearer per token) than the baseline and may leave devices idle (PlanResult::idle).
/// The main search's plans all use every usable device, so they cost the same per hour and
/// their throughput order is their cost order: the objective ranks the candidates of
/// different device sets, after the searches. Deterministic for the same inputs and options (threads and
/// time limits aside: a time limit may stop it early). Throws whale::Error when: the cluster
/// has no usable device; the global batch is not a positive number that some micro-batching
/// can divide; the hints contradict each other or cannot be met (naming the hint); no plan
/// fits in memory (saying by how much at the closest plan and what would help); the cost
/// objective or a budget lacks a device's price; or no plan found fits the budget (naming the
/// cheapest plan's price).
PlanResult search_plans(const Cluster& cluster, const Model& model, const CostModel& cost,
                        const PlannerOptions& options);

/// The global batch a search plans: options.global_batch where set, else the model's.
int batch_of(const Model& model, const PlannerOptions& options);

/// The best uniform plan, as Megatron-LM or DeepSpeed would run it: the same (dp, tp) in every
/// stage over all usable devices in id order, an even split of the transformer layers, even
/// shares, 1f1b, one recomputation setting for all. `found` is false when none fits; then
/// `missing`, where given, says why (no layout divides the batch, none fits in memory). `keep`,
/// where given, leaves out the uniform structures it rejects (a framework's limits).
RankedPlan search_baseline(const Cluster& cluster, const Model& model, const CostModel& cost,
                           const PlannerOptions& options, bool* found, std::string* missing = nullptr,
                           const std::function<bool(const Structure&)>& keep = nullptr);

/// HetHub's upper bound over the usable devices.
UpperBound search_upper_bound(const Cluster& cluster, const Model& model, const CostModel& cost,
                              const PlannerOptions& options);

/// The parts of search_upper_bound, for callers that spread them over threads: the device
/// models with usable devices (in cluster order), the best throughput of one model's usable
/// devices planned alone (0 when no plan fits), and the bound from those throughputs in that order.
std::vector<std::string> upper_bound_models(const Cluster& cluster, const PlannerOptions& options);
double search_model_alone(const Cluster& cluster, const Model& model, const CostModel& cost,
                          const PlannerOptions& options, const std::string& device_model);
/// The best plan of one model's usable devices alone; `found` is false when none fits.
RankedPlan plan_model_alone(const Cluster& cluster, const Model& model, const CostModel& cost,
                            const PlannerOptions& options, const std::string& device_model, bool* found);
/// The best plan of the usable devices of `device_models` together (the others idle), searched
/// like the main search with no hint beyond exclusions; `found` is false when none fits.
RankedPlan plan_models_together(const Cluster& cluster, const Model& model, const CostModel& cost,
                                const PlannerOptions& options, const std::vector<std::string>& device_models,
                                bool* found);
/// The device-model subsets worth planning apart besides each model alone and all together:
/// with the models ranked by their throughput alone (`samples_per_s`, in the order of
/// `device_models`; ties and models with no plan alone keep cluster order, after those with
/// one), the k strongest for k = 2 .. n - 1, so that a plan may leave the weakest models idle.
/// Empty for fewer than 3 models.
std::vector<std::vector<std::string>> strongest_subsets(const std::vector<std::string>& device_models,
                                                        const std::vector<double>& samples_per_s);
UpperBound upper_bound_of(const std::vector<std::string>& device_models, const std::vector<double>& samples_per_s);

/// The plan in words, one line per stage: layers, devices and their model, dp x tp, shares,
/// recomputation and optimizer sharding; headed by the schedule and micro-batching.
std::string describe_plan(const Plan& plan);

/// The planner's text summary: the alternatives, the comparison and the search figures (the
/// best plan's own report is printed by the caller before it). Ends with a newline.
std::string format_planner_text(const PlanResult& result);

/// The planner's JSON object: objective, budget_usd_per_hour (null: none), best {label,
/// schedule, chunks, micro_batch_size, micro_batches, step_time_s, samples_per_s, tokens_per_s,
/// usd_per_hour, usd_per_million_tokens (null without prices), mfu, stages[...]},
/// alternatives[...], baseline,
/// upper_bound, speedup_vs_baseline, fraction_of_upper_bound, device_models,
/// search {candidates_evaluated, candidates_bounded, candidates_simulated, structures, wall_s,
/// timed_out}.
/// Ends with a newline.
std::string format_planner_json(const PlanResult& result);

}  // namespace whale::plan

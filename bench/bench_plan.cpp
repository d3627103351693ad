// File: bench_plan.cpp
// Planner benchmarks (figures, not tests): GPT-3 175B on mixed-1024 and on 64 A100-80GB at
// batch 1536; wall time, layouts per second, layouts bounded away and simulated, and the best
// plan's predicted throughput. The README's figures for the whole whale-plan command come from
// whole-process timing from outside (see the README's benchmark table).
#include <chrono>
#include <cstdio>
#include <string>

#include "whale/plan/error.h"
#include "whale/plan/planner.h"
#include "whale/sim/simulator.h"

namespace {

void bench(const std::string& cluster_name, const std::string& model_name, int global_batch, bool compare) {
  const std::string root = WHALE_SOURCE_DIR;
  const whale::plan::Cluster cluster = whale::plan::load_cluster(root + "/configs/clusters/" + cluster_name + ".yaml");
  const whale::plan::Model model = whale::plan::load_model(root + "/configs/models/" + model_name + ".yaml");
  const whale::sim::Simulator simulator;
  whale::plan::PlannerOptions options;
  options.global_batch = global_batch;
  options.compare = compare;
  options.threads = 2;
  const auto start = std::chrono::steady_clock::now();
  const whale::plan::PlanResult r = whale::plan::search_plans(cluster, model, simulator, options);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const whale::plan::RankedPlan& best = r.best();
  std::printf("%-10s %-10s batch %5d %-13s wall %7.3f s  search %7.3f s  %6ld layouts (%8.0f/s)  %3ld bounded away"
              "  %3ld simulated  best %9.4g samples/s  (%s, %s, %d x %d)",
              cluster_name.c_str(), model_name.c_str(), global_batch, compare ? "+comparison" : "search only",
              wall_s, r.stats.wall_s, r.stats.candidates_evaluated, r.stats.candidates_evaluated / r.stats.wall_s,
              r.stats.candidates_bounded, r.stats.candidates_simulated, best.estimate.samples_per_s, best.label.c_str(),
              whale::plan::to_string(best.plan.schedule.kind), best.plan.micro_batches, best.plan.micro_batch_size);
  if (compare) std::printf("  speedup %.3fx  %.1f%% of upper bound", r.speedup_vs_baseline, 100 * r.fraction_of_upper_bound);
  std::printf("\n");
}

}  // namespace

int main() {
  try {
    // Calculon's optimal search for this case takes ~150 s and predicts 6.38 samples/s (t2 p16 d2).
    bench("a100-64", "gpt3-175b", 1536, false);
    bench("a100-64", "gpt3-175b", 1536, true);
    bench("mixed-1024", "gpt3-175b", 1536, false);
    bench("mixed-1024", "gpt3-175b", 1536, true);
  } catch (const whale::Error& e) {
    std::fprintf(stderr, "bench_plan: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

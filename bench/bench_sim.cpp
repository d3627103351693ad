// File: bench_sim.cpp
// Benchmark: one simulated step of GPT-3 175B on 1,024 A100s (tp 8, pp 8, dp 16, 96
// micro-batches, 1F1B), on one core. Prints ms per step, engine events per second and peak RSS.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

/// GPT-3 175B: t8 inside a node, p8 over node groups, d16; 12 blocks per stage, the embedding
/// on the first and the head on the last.
plan::Plan gpt3_175b_on_1024() {
  const std::string root = WHALE_SOURCE_DIR;
  plan::Plan p;
  p.cluster = plan::load_cluster(root + "/configs/validation/clusters/a100-80gb-1024.yaml");
  p.model = plan::load_model(root + "/configs/models/gpt3-175b.yaml");
  p.precision = plan::Precision::bf16;
  plan::generate_layers(p.model, p.precision);
  const int tp = 8, pp = 8, dp = 16, blocks_per_stage = p.model.num_layers / pp;
  p.micro_batch_size = dp;
  p.micro_batches = 96;
  p.schedule.kind = plan::ScheduleKind::one_f_one_b;
  for (int s = 0; s < pp; ++s) {
    plan::Stage stage;
    stage.first_layer = s == 0 ? 0 : 1 + s * blocks_per_stage;
    stage.end_layer = s == pp - 1 ? p.model.num_layers + 2 : 1 + (s + 1) * blocks_per_stage;
    stage.tp = tp;
    for (int d = 0; d < tp * dp; ++d) stage.devices.push_back(s * tp * dp + d);
    stage.shares.assign(dp, 1);
    stage.recompute = plan::Recompute::full;
    p.stages.push_back(stage);
  }
  plan::validate_plan(p);
  return p;
}

}  // namespace

int main() {
  const plan::Plan p = gpt3_175b_on_1024();
  const sim::Simulator simulator;
  sim::SimulationStats stats;
  plan::Estimate est = simulator.evaluate(p, {}, &stats);  // warm-up
  const int repeats = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) est = simulator.evaluate(p, {}, &stats);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("bench_sim: GPT-3 175B, 1024 GPUs (t8 p8 d16), %d micro-batches, 1f1b\n",
              p.micro_batches);
  std::printf("  simulated step        %.3f s (MFU %.1f%%, bubble %.1f%%)\n", est.step_time_s,
              100 * est.mfu, 100 * est.bubble_fraction);
  std::printf("  wall time per step    %.2f ms (mean of %d, one thread)\n", 1e3 * seconds, repeats);
  std::printf("  engine events         %llu (%d replica units, %d run) -> %.2f M events/s\n",
              static_cast<unsigned long long>(stats.engine_events), stats.replica_units, stats.simulated_units,
              stats.engine_events / seconds / 1e6);
  std::printf("  peak RSS              %.1f MB\n", usage.ru_maxrss / 1024.0);
  return 0;
}

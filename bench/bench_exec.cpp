// File: bench_exec.cpp
// Benchmark of the CPU runtime: single-rank training throughput (tokens/s) of a GPT with d=256,
// 4 layers, sequence 128 (configs/models/bench-d256.yaml), and the model's GEMM FLOP rate in
// training next to raw Eigen GEMMs of the same shapes (forward and both backward products).
// The training rate counts the whole step time, GEMMs and everything else, so it is a lower
// bound on the matmul throughput inside training. Times are wall-clock and process CPU time,
// best of several runs; on a shared machine the CPU-time ratio is the one to trust (a long
// training step is preempted by other processes where a short raw GEMM is not).
#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "whale/exec/runtime/data_file.h"
#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/executor.h"
#include "whale/exec/comm/mpi_communicator.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/exec/comm/run_transport.h"

using namespace whale;
using Clock = std::chrono::steady_clock;
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

constexpr int kBatch = 8;

plan::Plan bench_plan() {
  plan::Plan p;
  p.model = plan::load_model(WHALE_SOURCE_DIR "/configs/models/bench-d256.yaml");
  p.cluster = plan::load_cluster(WHALE_SOURCE_DIR "/configs/clusters/cpu-local-8.yaml");
  p.precision = plan::Precision::fp32;
  p.micro_batch_size = kBatch;
  p.micro_batches = 1;
  plan::Stage stage;
  stage.end_layer = static_cast<int>(p.model.layers.size());
  stage.devices = {0};
  stage.shares = {kBatch};
  p.stages = {stage};
  plan::validate_plan(p);
  return p;
}

double cpu_now_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Wall-clock and CPU seconds of an interval, or the best (smallest) of several.
struct Timing {
  double wall = 1e30, cpu = 1e30;
  void keep_best(const Timing& other) {
    wall = std::min(wall, other.wall);
    cpu = std::min(cpu, other.cpu);
  }
  Timing operator+(const Timing& other) const { return {wall + other.wall, cpu + other.cpu}; }
  Timing operator*(int times) const { return {wall * times, cpu * times}; }
};

/// Times `op` (wall-clock and CPU).
template <class Op>
Timing timed(Op op) {
  const auto wall_start = Clock::now();
  const double cpu_start = cpu_now_s();
  op();
  return {std::chrono::duration<double>(Clock::now() - wall_start).count(),
          cpu_now_s() - cpu_start};
}

/// Timing of one c(m,n) = a(m,k) b(k,n) with Eigen, best of `repeats`.
Timing eigen_gemm_s(int m, int n, int k, int repeats) {
  Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n), c(m, n);
  Timing best;
  for (int r = 0; r < repeats; ++r) best.keep_best(timed([&] { c.noalias() = a * b; }));
  if (c(0, 0) == 12345.0f) std::puts("");  // keeps the product alive
  return best;
}

/// Raw Eigen time of every GEMM of a training step (forward, input and weight gradients).
Timing raw_gemm_step_s(const plan::Model& model) {
  Timing total{0, 0};
  for (const plan::Layer& layer : model.layers)
    for (const plan::GemmOp& g : layer.gemms) {
      // Batched products (attention, count = heads) run count * batch times at (m, n, k);
      // weight GEMMs run once with the batch folded into m.
      const bool batched = g.count > 1 || g.name.find("scores") != std::string::npos ||
                           g.name.find("context") != std::string::npos;
      const int times = batched ? static_cast<int>(g.count) * kBatch : 1;
      const int m = batched ? static_cast<int>(g.m) : static_cast<int>(g.m) * kBatch;
      const int n = static_cast<int>(g.n), k = static_cast<int>(g.k);
      total = total + (eigen_gemm_s(m, n, k, 5) + eigen_gemm_s(m, k, n, 5) +
                       eigen_gemm_s(k, n, m, 5)) * times;
    }
  return total;
}

}  // namespace

int main() {
  exec::MpiSession session;
  const plan::Plan plan = bench_plan();
  const exec::RankLayout layout(plan);
  auto world = exec::world_communicator();
  auto transport = exec::make_mpi_transport();
  const exec::DataLoader loader(exec::load_tokens(WHALE_SOURCE_DIR "/data/corpus.txt"), plan, 1);
  exec::ExecutorOptions options;
  options.seed = 1;
  exec::Executor executor(plan, layout, *world, *transport, options);

  executor.train_step(loader, 0);  // warm-up
  // Best of 5 steps, like the raw GEMMs below: other processes on a shared machine only add.
  const int steps = 5;
  double loss = 0, total_wall_s = 0;
  Timing step_s;
  for (int s = 1; s <= steps; ++s) {
    const Timing one = timed([&] { loss = executor.train_step(loader, s); });
    step_s.keep_best(one);
    total_wall_s += one.wall;
  }
  const double tokens = static_cast<double>(kBatch) * plan.model.sequence;
  double gemm_flops = 0;  // forward + two backward GEMMs per forward GEMM
  for (const plan::Layer& layer : plan.model.layers)
    gemm_flops += 3 * layer.forward_flops() * kBatch;
  const Timing raw_s = raw_gemm_step_s(plan.model);

  std::printf("bench_exec: GPT d=%d, %d layers, sequence %d, batch %d, 1 rank (fp32, CPU)\n",
              plan.model.hidden, plan.model.num_layers, plan.model.sequence, kBatch);
  std::printf("  training: best %.3f s/step, %.0f tokens/s (mean %.0f tokens/s; loss %.3f after "
              "%d steps)\n",
              step_s.wall, tokens / step_s.wall, tokens * steps / total_wall_s, loss, steps + 1);
  std::printf("  training, CPU time: best %.3f s/step, %.0f tokens/s\n", step_s.cpu,
              tokens / step_s.cpu);
  std::printf("  GEMM flops per step: %.3f GFLOP\n", gemm_flops / 1e9);
  std::printf("  in training (whole step): %.2f GFLOP/s wall, %.2f GFLOP/s CPU time\n",
              gemm_flops / step_s.wall / 1e9, gemm_flops / step_s.cpu / 1e9);
  std::printf("  raw Eigen GEMMs, same shapes: %.3f s, %.2f GFLOP/s wall; %.3f s, %.2f GFLOP/s "
              "CPU time\n",
              raw_s.wall, gemm_flops / raw_s.wall / 1e9, raw_s.cpu, gemm_flops / raw_s.cpu / 1e9);
  std::printf("  training / raw: %.0f%% wall, %.0f%% CPU time (goal >= 50%%)\n",
              100.0 * raw_s.wall / step_s.wall, 100.0 * raw_s.cpu / step_s.cpu);
  return 0;
}

// File: test_planner_properties.cpp
// Properties of whale-plan's search over every shipped cluster x GPT-3 1.3B, 13B, 175B,
// Llama-2 70B, Llama-3 405B, Llama-3 70B (its Hugging Face config.json) and two mixtures of
// experts (Mixtral 8x7B's config.json, whose expert layouts the search chooses too, and the
// tiny MoE, which fits the small clusters) x global batches 512 to 65,536 in powers of two: a
// plan at batch B means a plan at 2B; the best plan is never slower than the baseline; on small
// clusters (<= 16 devices, <= 2 device models) the best plan is at least as fast as the
// exhaustive optimum of the same space (batches 512 to 2048). The cells run on two threads:
// about 9 min of CPU in all.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "planner_fixtures.h"
#include "whale/plan/error.h"

using namespace whale;

namespace {

const char* const kClusters[] = {"a100-64",  "a100-v100",      "cpu-local-4", "cpu-local-8", "cpu-local-slow",
                                 "cpu-local", "cpu-measured",  "mixed-1024",  "mixed-node",  "v100-t4"};
const char* const kModels[] = {"gpt3-1.3b.yaml",   "gpt3-13b.yaml",   "gpt3-175b.yaml",
                               "llama2-70b.yaml",  "llama3-405b.yaml", "hf/llama3-70b-config.json",
                               "hf/mixtral-8x7b-config.json", "tiny-moe.yaml"};
constexpr int kFirstBatch = 512;
constexpr int kLastBatch = 65536;
// Layouts a round at most: the properties hold under any cap (a round whose candidates all
// overflow is followed by another; the baseline is a candidate), and a smaller cap keeps the
// 480 searches within minutes on two cores.
constexpr long kGridCap = 1000;
// The exhaustive twin simulates every candidate of the space, whose simulated step grows with
// the micro-batch count: up to 2048 it takes about 20 s of CPU, up to 65,536 more than 6 min.
constexpr int kExhaustiveLastBatch = 2048;

plan::Model grid_model(const std::string& name) {
  return plan::load_model(std::string(WHALE_SOURCE_DIR) + "/configs/models/" + name);
}

struct Outcome {
  bool found = false;
  double best_samples_per_s = 0;
  bool baseline_found = false;
  double baseline_samples_per_s = 0;
  std::string error;
};

struct Cell {
  std::string cluster, model;
  std::vector<Outcome> by_batch;   // kFirstBatch, 2 kFirstBatch, ...
};

Outcome plan_at(const plan::Cluster& cluster, const plan::Model& model, int batch) {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = batch;
  o.top_k = 0;
  o.max_evaluations = kGridCap;
  Outcome out;
  try {
    const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
    out.found = true;
    out.best_samples_per_s = r.best().estimate.samples_per_s;
    out.baseline_found = r.baseline_found;
    out.baseline_samples_per_s = r.baseline.estimate.samples_per_s;
  } catch (const Error& e) {
    out.error = e.what();
  }
  return out;
}

// Runs `work(i)` for i in [0, n) on two threads.
template <typename F>
void on_two_threads(int n, F work) {
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int i = next++; i < n; i = next++) work(i);
  };
  std::thread other(worker);
  worker();
  other.join();
}

bool small_cluster(const plan::Cluster& cluster) {
  return cluster.devices.size() <= 16 && cluster.device_models().size() <= 2;
}

}  // namespace

TEST_CASE("over the shipped grid: a plan at B means one at 2B, and the best is never slower than the baseline") {
  std::vector<Cell> cells;
  for (const char* c : kClusters) {
    for (const char* m : kModels) cells.push_back(Cell{c, m, {}});
  }
  on_two_threads(static_cast<int>(cells.size()), [&](int i) {
    Cell& cell = cells[i];
    const plan::Cluster cluster = test::shipped_cluster(cell.cluster);
    const plan::Model model = grid_model(cell.model);
    for (int batch = kFirstBatch; batch <= kLastBatch; batch *= 2) cell.by_batch.push_back(plan_at(cluster, model, batch));
  });
  int found = 0;
  for (const Cell& cell : cells) {
    for (size_t k = 0; k < cell.by_batch.size(); ++k) {
      const Outcome& o = cell.by_batch[k];
      CAPTURE(cell.cluster);
      CAPTURE(cell.model);
      CAPTURE(kFirstBatch << k);
      CAPTURE(o.error);
      found += o.found;
      if (k + 1 < cell.by_batch.size() && o.found) {
        CAPTURE(cell.by_batch[k + 1].error);
        CHECK(cell.by_batch[k + 1].found);
      }
      if (o.found && o.baseline_found) CHECK(o.best_samples_per_s >= o.baseline_samples_per_s);
    }
  }
  MESSAGE(found << " of " << cells.size() * cells.front().by_batch.size() << " grid points have a plan");
  CHECK(found > 0);
}

TEST_CASE("on small shipped clusters the best plan is at least as fast as the exhaustive optimum of its space") {
  struct Twin {
    std::string cluster, model;
    int batch = 0;
    double search_s = 0, exhaustive_s = 0;   // best step times; infinity: none fits
    long candidates = 0;
  };
  std::vector<Twin> twins;
  for (const char* c : kClusters) {
    if (!small_cluster(test::shipped_cluster(c))) continue;
    for (const char* m : kModels) {
      for (int batch = kFirstBatch; batch <= kExhaustiveLastBatch; batch *= 2) twins.push_back(Twin{c, m, batch});
    }
  }
  on_two_threads(static_cast<int>(twins.size()), [&](int i) {
    Twin& t = twins[i];
    const plan::Cluster cluster = test::shipped_cluster(t.cluster);
    const plan::Model model = grid_model(t.model);
    t.exhaustive_s = test::exhaustive_best_step_s(cluster, model, t.batch, &t.candidates);
    const sim::Simulator simulator;
    plan::PlannerOptions o;
    o.global_batch = t.batch;
    o.compare = false;
    o.top_k = 0;
    try {
      t.search_s = plan::search_plans(cluster, model, simulator, o).best().estimate.step_time_s;
    } catch (const Error&) {
      t.search_s = std::numeric_limits<double>::infinity();
    }
  });
  int with_plan = 0;
  for (const Twin& t : twins) {
    CAPTURE(t.cluster);
    CAPTURE(t.model);
    CAPTURE(t.batch);
    CAPTURE(t.candidates);
    CAPTURE(t.exhaustive_s);
    if (std::isinf(t.exhaustive_s)) continue;
    ++with_plan;
    CHECK(t.search_s <= t.exhaustive_s * (1 + 1e-12));
  }
  MESSAGE(with_plan << " of " << twins.size() << " small-cluster points have a plan in the exhaustive space");
  CHECK(twins.size() > 0);
}

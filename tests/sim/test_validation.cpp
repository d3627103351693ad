// File: test_validation.cpp
// The simulator against published figures: every row of Megatron-LM 2021 Table 1
// within 15% in TFLOP/s per GPU (the paper's FLOP formula on the simulated step time), and
// Korthikanti 2022's GPT-3 175B step on 64 GPUs with full recomputation within 15%.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "whale/plan/plan.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

const std::string kDir = std::string(WHALE_SOURCE_DIR) + "/configs/validation/";

/// Narayanan et al. 2021: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), recomputation included.
double paper_flops_per_step(const plan::Plan& p) {
  const double b = p.global_batch(), s = p.model.sequence, l = p.model.num_layers;
  const double h = p.model.hidden, v = p.model.vocabulary;
  return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}

plan::Estimate simulate(const plan::Plan& p) { return sim::Simulator().evaluate(p, {}); }

}  // namespace

TEST_CASE("Megatron-LM 2021 Table 1: simulated TFLOP/s per GPU within 15% of the paper") {
  struct Row {
    const char* file;
    double published_tflops;
  };
  const Row rows[] = {
      {"row-01-1.7b.yaml", 137},   {"row-02-3.6b.yaml", 138},   {"row-03-7.5b.yaml", 142},
      {"row-04-18.4b.yaml", 135},  {"row-05-39.1b.yaml", 138},  {"row-06-76.1b.yaml", 140},
      {"row-07-145.6b.yaml", 148}, {"row-08-310.1b.yaml", 155}, {"row-09-529.6b.yaml", 163},
      {"row-10-1008b.yaml", 163},
  };
  for (const Row& row : rows) {
    CAPTURE(row.file);
    const plan::Plan p = plan::load_plan(kDir + "megatron-2021/" + row.file);
    const plan::Estimate est = simulate(p);
    CHECK(est.fits);
    const double tflops = paper_flops_per_step(p) / est.step_time_s / est.devices.size() / 1e12;
    CAPTURE(tflops);
    CHECK(std::abs(tflops - row.published_tflops) / row.published_tflops < 0.15);
  }
}

TEST_CASE("Korthikanti 2022: GPT-3 175B on 64 A100s, full recomputation, 18.13 s within 15%") {
  const plan::Plan p =
      plan::load_plan(kDir + "korthikanti-2022/gpt3-175b-64gpu-full-recompute.yaml");
  REQUIRE(p.cluster.devices.size() == 64);
  REQUIRE(p.global_batch() == 64);
  const plan::Estimate est = simulate(p);
  CAPTURE(est.step_time_s);
  CHECK(est.fits);
  CHECK(std::abs(est.step_time_s - 18.13) / 18.13 < 0.15);
}

// File: test_korthikanti_2022.cpp
// The simulator against Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Table 4: end-to-end iteration times on A100s of the four models of
// their Table 3, with full recomputation and with sequence parallelism + selective
// recomputation. One set of profile figures for every row; nothing is calibrated per row.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "whale/plan/plan.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

const std::string kDir = std::string(WHALE_SOURCE_DIR) + "/configs/validation/korthikanti-2022/";

struct Row {
  const char* file;
  double published_s;  // Table 4
  double tolerance;    // relative
};

}  // namespace

TEST_CASE("Korthikanti 2022 Table 4: simulated step times against the published ones") {
  // 175B within 5% in both columns; every other row within 10%.
  const Row rows[] = {
      {"22b-8gpu-full-recompute.yaml", 1.42, 0.10},
      {"22b-8gpu-sequence-parallel-selective.yaml", 1.10, 0.10},
      {"175b-64gpu-full-recompute.yaml", 18.13, 0.05},
      {"175b-64gpu-sequence-parallel-selective.yaml", 13.75, 0.05},
      {"530b-280gpu-full-recompute.yaml", 49.05, 0.10},
      {"530b-280gpu-sequence-parallel-selective.yaml", 37.83, 0.10},
      {"1t-512gpu-full-recompute.yaml", 94.42, 0.10},
      {"1t-512gpu-sequence-parallel-selective.yaml", 71.49, 0.10},
  };
  for (const Row& row : rows) {
    CAPTURE(row.file);
    const plan::Plan p = plan::load_plan(kDir + row.file);
    const plan::Estimate est = sim::Simulator().evaluate(p, {});
    CAPTURE(est.step_time_s);
    CHECK(est.fits);
    CHECK(std::abs(est.step_time_s - row.published_s) / row.published_s < row.tolerance);
  }
}

TEST_CASE("Korthikanti 2022: sequence parallelism + selective recomputation beats full recomputation") {
  for (const char* model : {"22b-8gpu", "175b-64gpu", "530b-280gpu", "1t-512gpu"}) {
    CAPTURE(model);
    const std::string stem = kDir + model;
    const double full_s =
        sim::Simulator().evaluate(plan::load_plan(stem + "-full-recompute.yaml"), {}).step_time_s;
    const double sp_s = sim::Simulator()
                            .evaluate(plan::load_plan(stem + "-sequence-parallel-selective.yaml"), {})
                            .step_time_s;
    // The paper's speed-ups are 1.29 to 1.32; whale's must be at least 1.2.
    CHECK(full_s / sp_s > 1.2);
  }
}

// File: test_planner_bound.cpp
// The cost model's step bound (CostModel::bound) is safe: never above the simulated step time,
// with the simulator's memory verdict; so the search that skips candidates by it finds the
// same plans as the search that simulates every candidate.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "planner_fixtures.h"
#include "whale/plan/plan.h"
#include "whale/plan/structure_figures.h"

using namespace whale;

namespace {

using Case = test::SearchCase;

std::vector<Case> cases() {
  std::vector<Case> out = test::small_search_cases();
  const plan::Model tiny = test::shipped_model("tiny");
  out.push_back({test::shipped_cluster("cpu-local"), tiny, tiny.training.global_batch});
  out.push_back({test::shipped_cluster("cpu-local-4"), tiny, tiny.training.global_batch});
  return out;
}

}  // namespace

TEST_CASE("the step bound never exceeds the simulated step time and agrees on memory") {
  const sim::Simulator simulator;
  std::mt19937 random(20260523);
  long checked = 0, overflowing = 0, both_checked = 0;
  for (const Case& c : cases()) {
    const plan::SpaceLimits limits = test::every_device(c.cluster);
    plan::AnalyticModel analytic(c.cluster, c.model);
    plan::Plan scratch;
    scratch.cluster = c.cluster;
    scratch.model = c.model;
    for (const plan::Structure& s : plan::enumerate_structures(c.cluster, c.model, limits)) {
      // A random batch of the model's sizes per structure, and random memory rungs.
      const int batch = c.batch * (1 + static_cast<int>(random() % 2)) / (1 + static_cast<int>(random() % 2));
      for (const plan::Choice& choice : plan::enumerate_choices(s, c.model, batch, limits)) {
        if (random() % 3 != 0) continue;  // a third of the candidates
        plan::LayoutRules rules;
        rules.split = random() % 2 ? plan::Split::per_stage : plan::Split::per_group;
        for (size_t g = 0; g < s.groups.size(); ++g) rules.min_rung.push_back(static_cast<int>(random() % 3));
        const plan::Layout layout = plan::build_layout(analytic, s, choice, rules);
        if (!layout.fits) continue;
        plan::apply_layout(scratch, choice, layout);
        plan::validate_plan(scratch);
        const plan::StepBound b = simulator.bound(scratch);
        const plan::Estimate e = simulator.evaluate(scratch, plan::EvaluateOptions{});
        CAPTURE(c.cluster.name);
        CAPTURE(describe_plan(scratch));
        CHECK((b.step_time_s > 0) == b.fits);
        CHECK(b.step_time_s <= e.step_time_s * (1 + 1e-12));
        CHECK(b.fits == e.fits);
        std::vector<int> over;
        for (const plan::DeviceEstimate& d : e.devices) {
          if (d.peak_memory_bytes > d.capacity_bytes) over.push_back(d.id);
        }
        CHECK(b.overflowing == over);
        // One program for both: the same verdict, bound and estimate, to the bit; below the
        // bound no run, and the bound it reports (maybe a cheaper part) still above the limit.
        if (checked % 4 == 0) {
          const plan::BoundedEstimate both =
              simulator.bound_and_evaluate(scratch, std::numeric_limits<double>::infinity(), plan::EvaluateOptions{});
          CHECK(both.bound.fits == b.fits);
          CHECK(both.bound.overflowing == b.overflowing);
          CHECK(both.estimate.has_value() == b.fits);
          if (b.fits && both.estimate) {
            CHECK(both.bound.step_time_s == b.step_time_s);
            CHECK(both.estimate->step_time_s == e.step_time_s);
            CHECK(both.estimate->mfu == e.mfu);
            CHECK(both.estimate->breakdown.idle_s == e.breakdown.idle_s);
            REQUIRE(both.estimate->devices.size() == e.devices.size());
            for (size_t d = 0; d < e.devices.size(); ++d) {
              CHECK(both.estimate->devices[d].peak_memory_bytes == e.devices[d].peak_memory_bytes);
              CHECK(both.estimate->devices[d].tensor_memory_bytes == e.devices[d].tensor_memory_bytes);
            }
            const double below = std::nextafter(b.step_time_s, 0.0);
            const plan::BoundedEstimate cut = simulator.bound_and_evaluate(scratch, below, plan::EvaluateOptions{});
            CHECK_FALSE(cut.estimate.has_value());
            CHECK(cut.bound.fits);
            CHECK(cut.bound.step_time_s > below);
            CHECK(cut.bound.step_time_s <= b.step_time_s);
            ++both_checked;
          }
        }
        overflowing += !b.fits;
        ++checked;
      }
    }
  }
  CHECK(checked > 500);
  CHECK(overflowing > 0);
  CHECK(both_checked > 100);
}

TEST_CASE("the search pruned by the bound finds the plans of simulating every candidate") {
  const sim::Simulator simulator;
  long bounded = 0;
  for (const Case& c : cases()) {
    plan::PlannerOptions every;
    every.global_batch = c.batch;
    every.compare = false;
    every.exhaustive_below = 1 << 30;  // simulate every candidate
    every.prune_with_bound = false;
    plan::PlannerOptions pruned = every;
    pruned.prune_with_bound = true;
    const plan::PlanResult want = plan::search_plans(c.cluster, c.model, simulator, every);
    const plan::PlanResult got = plan::search_plans(c.cluster, c.model, simulator, pruned);
    CAPTURE(c.cluster.name);
    CAPTURE(c.model.name);
    CHECK(want.stats.candidates_bounded == 0);
    CHECK(got.stats.candidates_simulated + got.stats.candidates_bounded == want.stats.candidates_simulated);
    REQUIRE(got.ranked.size() == want.ranked.size());
    for (size_t i = 0; i < want.ranked.size(); ++i) {
      CHECK(got.ranked[i].label == want.ranked[i].label);
      CHECK(plan::describe_plan(got.ranked[i].plan) == plan::describe_plan(want.ranked[i].plan));
      CHECK(got.ranked[i].estimate.step_time_s == want.ranked[i].estimate.step_time_s);
    }
    bounded += got.stats.candidates_bounded;
  }
  CHECK(bounded > 100);  // the bound does prune
}

TEST_CASE("a structure's least bound never exceeds the bound of any of its micro-batch sizes") {
  // The search makes a structure's work items once their least bound is reached, which yields
  // them in bound order only if no item's bound lies below it.
  std::vector<Case> all = cases();
  all.push_back({test::shipped_cluster("a100-v100"), test::shipped_model("gpt3-1.3b"), 512});
  long checked = 0;
  for (const Case& c : all) {
    const plan::SpaceLimits limits = test::every_device(c.cluster);
    plan::AnalyticModel analytic(c.cluster, c.model);
    plan::StructureFigures figures(analytic);
    for (const plan::Structure& s : plan::enumerate_structures(c.cluster, c.model, limits)) {
      const std::vector<plan::Choice> choices = plan::enumerate_choices(s, c.model, c.batch, limits);
      if (choices.empty()) continue;
      const double least = figures.least_bound_s(s, c.batch);
      CAPTURE(c.cluster.name);
      CAPTURE(s.label);
      for (const plan::Choice& choice : choices) {
        const double bound = figures.bound_s(s, choice.micro_batch_size, c.batch);
        CHECK(least <= bound);
        CHECK(bound == plan::structure_bound_s(analytic, s, choice.micro_batch_size, c.batch));
        ++checked;
      }
    }
  }
  CHECK(checked > 1000);
}

// File: test_planner_exhaustive.cpp
// Quality bar: on small clusters (<= 8 devices, the tiny model) the planner's best plan equals
// the exhaustive optimum of its space, both when the space is simulated whole and when the
// analytic bound prunes it and only a few candidates reach the simulator.
#include <doctest/doctest.h>

#include "planner_fixtures.h"
#include "whale/plan/plan.h"

using namespace whale;

namespace {

void check_matches_exhaustive(const plan::Cluster& cluster, const plan::Model& model, int batch) {
  long candidates = 0;
  const double optimum = test::exhaustive_best_step_s(cluster, model, batch, &candidates);
  REQUIRE(candidates > 1);
  const sim::Simulator simulator;
  plan::PlannerOptions whole;
  whole.global_batch = batch;
  whole.compare = false;
  whole.exhaustive_below = 1 << 30;  // simulate every candidate
  plan::PlannerOptions pruned = whole;
  pruned.exhaustive_below = 0;       // analytic bound and ranking, then a few simulations
  pruned.simulate_budget = 6;
  for (const plan::PlannerOptions& o : {whole, pruned}) {
    const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
    CAPTURE(cluster.name);
    CAPTURE(candidates);
    CAPTURE(o.exhaustive_below);
    CAPTURE(r.best().label);
    CAPTURE(plan::describe_plan(r.best().plan));
    CHECK(r.best().estimate.step_time_s == doctest::Approx(optimum).epsilon(1e-12));
    CHECK_NOTHROW(plan::validate_plan(r.best().plan));
  }
}

}  // namespace

TEST_CASE("best plan equals the exhaustive optimum on small homogeneous CPU clusters") {
  const plan::Model tiny = test::shipped_model("tiny");
  for (const char* name : {"cpu-local", "cpu-local-4", "cpu-local-8"}) {
    check_matches_exhaustive(test::shipped_cluster(name), tiny, tiny.training.global_batch);
  }
}

TEST_CASE("best plan equals the exhaustive optimum on small heterogeneous clusters") {
  const plan::Model tiny = test::shipped_model("tiny");
  check_matches_exhaustive(test::shipped_cluster("mixed-node"), tiny, 16);
  check_matches_exhaustive(plan::load_cluster(test::temp_file("two_node_mix.yaml", test::kTwoNodeMix)), tiny, 32);
}

// File: test_calculon_175b.cpp
// GPT-3 175B on 64 A100-80GB at batch 1536: whale's best plan against Calculon's best layout
// (t2 p16 d2, 6.38 samples/s in Calculon), both simulated by whale; and what --runnable
// (the strategies whale-run executes) leaves out.
#include <doctest/doctest.h>

#include <string>

#include "planner_fixtures.h"
#include "whale/plan/hints.h"
#include "whale/plan/plan_runtime.h"

using namespace whale;

namespace {

plan::PlanResult search(const plan::PlannerOptions& options) {
  const plan::Cluster cluster = test::shipped_cluster("a100-64");
  const plan::Model model = test::shipped_model("gpt3-175b");
  return plan::search_plans(cluster, model, sim::Simulator(), options);
}

plan::PlannerOptions options_1536() {
  plan::PlannerOptions o;
  o.global_batch = 1536;
  o.compare = false;
  return o;
}

}  // namespace

TEST_CASE("175B on 64 A100s: whale's best plan is at least as fast as Calculon's t2 p16 d2") {
  const plan::PlanResult best = search(options_1536());
  plan::PlannerOptions calculon = options_1536();
  calculon.hints = plan::load_hints(std::string(WHALE_SOURCE_DIR) +
                                    "/configs/validation/calculon-2023/gpt3-175b-a100-64-t2p16d2.hints.yaml");
  const plan::PlanResult t2p16d2 = search(calculon);
  const plan::Plan& c = t2p16d2.best().plan;
  REQUIRE(c.pipeline_groups() == 16);
  for (const plan::Stage& s : c.stages) {
    CHECK(s.tp == 2);
    CHECK(s.dp() == 2);
  }
  CAPTURE(best.best().estimate.samples_per_s);
  CAPTURE(t2p16d2.best().estimate.samples_per_s);
  CHECK(best.best().estimate.samples_per_s >= t2p16d2.best().estimate.samples_per_s);
  // The best plan uses sequence parallelism on its tensor-parallel stages.
  for (const plan::Stage& s : best.best().plan.stages) CHECK(s.sequence_parallel == (s.tp > 1));
}

TEST_CASE("--runnable searches every strategy, since whale-run executes them all") {
  plan::PlannerOptions runnable = options_1536();
  runnable.strategies = plan::runnable_strategies();
  const plan::PlanResult r = search(runnable);
  CHECK(plan::unsupported_by_runtime(r.best().plan).empty());
  const plan::PlanResult full = search(options_1536());
  CHECK(full.best().estimate.samples_per_s == r.best().estimate.samples_per_s);
  // The best plan needs sequence parallelism, which --runnable no longer turns off.
  bool sequence_parallel = false;
  for (const plan::Stage& s : r.best().plan.stages) sequence_parallel |= s.sequence_parallel;
  CHECK(sequence_parallel);
}

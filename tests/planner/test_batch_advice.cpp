// File: test_batch_advice.cpp
// Small-batch advice on mixed-node (4 RTX 3090 + 4 A10, gpt3-1.3b): batch 1 leaves the
// pipelines empty, and global batch 6 is the smallest whose best plan reaches 90% of the upper
// bound (batches 2, 3, 4 and 5 reach 74.7%, 80.7%, 73.5% and 89.0%; 6 reaches 93.5%).
#include <doctest/doctest.h>

#include "planner_fixtures.h"
#include "whale/plan/batch_advice.h"

using namespace whale;

namespace {

double fraction_at(const plan::Cluster& cluster, const plan::Model& model, int batch) {
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = batch;
  return plan::search_plans(cluster, model, simulator, o).fraction_of_upper_bound;
}

// The advice tests' inputs: mixed-node, gpt3-1.3b, and options at global batch 1.
struct AdviceInputs {
  plan::Cluster cluster = test::shipped_cluster("mixed-node");
  plan::Model model = test::shipped_model("gpt3-1.3b");
  sim::Simulator simulator;
  plan::PlannerOptions options = at_batch_one();

  static plan::PlannerOptions at_batch_one() {
    plan::PlannerOptions o;
    o.global_batch = 1;
    return o;
  }
};

}  // namespace

TEST_CASE("small-batch advice names the smallest batch that reaches 90% of the upper bound") {
  AdviceInputs in;
  const plan::Cluster& cluster = in.cluster;
  const plan::Model& model = in.model;
  const sim::Simulator& simulator = in.simulator;
  plan::PlannerOptions& options = in.options;
  const plan::PlanResult one = plan::search_plans(cluster, model, simulator, options);
  CHECK(plan::batch_too_small(one, 8, 0.9));
  CHECK(one.fraction_of_upper_bound < 0.9);

  const plan::BatchAdvice advice = plan::advise_global_batch(cluster, model, simulator, options, 1, 0.9);
  REQUIRE(advice.found);
  CHECK(advice.global_batch == 6);
  CHECK(advice.fraction_of_upper_bound >= 0.9);
  CHECK(advice.fraction_of_upper_bound == doctest::Approx(fraction_at(cluster, model, 6)));
  for (int smaller = 2; smaller < 6; ++smaller) {
    CAPTURE(smaller);
    CHECK(fraction_at(cluster, model, smaller) < 0.9);
  }
  const std::string line = plan::format_batch_warning(1, one, advice, 0.9);
  CHECK(line.rfind("warning: global batch 1 is too small for this cluster (best plan: 1 micro-batches over ", 0) == 0);
  CHECK(line.find("; global batch 6 is the smallest that reaches 90% (") != std::string::npos);
  CHECK(line.back() == '\n');

  // At batch 64 the best plan fills its pipelines and every device could hold a sample.
  options.global_batch = 64;
  CHECK_FALSE(plan::batch_too_small(plan::search_plans(cluster, model, simulator, options), 8, 0.9));
}

TEST_CASE("small-batch advice under a time limit: the same answer while time is left, 'cut' once it is spent") {
  AdviceInputs in;
  const plan::Cluster& cluster = in.cluster;
  const plan::Model& model = in.model;
  const sim::Simulator& simulator = in.simulator;
  plan::PlannerOptions options = in.options;
  options.threads = 1;   // a fake clock need not be thread-safe
  options.time_limit_s = 1.0;
  options.clock_s = [] { return 0.0; };   // time never passes: the limit is never reached
  const plan::BatchAdvice timely = plan::advise_global_batch(cluster, model, simulator, options, 1, 0.9);
  CHECK_FALSE(timely.cut);
  REQUIRE(timely.found);
  CHECK(timely.global_batch == 6);

  // The clock jumps past the limit after the advice's first reading: no batch is judged.
  auto readings = std::make_shared<long>(0);
  options.clock_s = [readings] { return (*readings)++ == 0 ? 0.0 : 1e9; };
  const plan::BatchAdvice cut = plan::advise_global_batch(cluster, model, simulator, options, 1, 0.9);
  CHECK(cut.cut);
  CHECK_FALSE(cut.found);
  CHECK(*readings == 2);   // its start, then the check before the first re-plan

  const plan::PlanResult at_one = plan::search_plans(cluster, model, simulator, in.options);
  const std::string line = plan::format_batch_warning(1, at_one, cut, 0.9);
  CHECK(line.find("; the time limit ended the search for a batch that reaches 90% (raise --time-limit for it)\n") !=
        std::string::npos);
  // whale-plan's own bound (no --time-limit) is named with its seconds and both remedies.
  const std::string bounded = plan::format_batch_warning(1, at_one, cut, 0.9, 12.4);
  CHECK(bounded.find("; the search for a batch that reaches 90% stopped after 12 s, as long as the planning took "
                     "(--time-limit S gives the whole command S s; or plan a larger --global-batch directly)\n") !=
        std::string::npos);
}

TEST_CASE("small-batch advice bisects an octave in eighths, multiples of the batch asked") {
  CHECK(plan::advice_step(8192, 512) == 1024);   // mixed-1024's 512: 8192 below, 16384 above
  CHECK(plan::advice_step(4096, 64) == 512);
  CHECK(plan::advice_step(1536, 96) == 192);
  CHECK(plan::advice_step(16, 1) == 2);
  CHECK(plan::advice_step(4, 1) == 1);            // never below the batch asked
  CHECK(plan::advice_step(24, 8) == 8);

  // The warning names the step where it is coarser than the batch asked.
  AdviceInputs in;
  in.options.global_batch = 1;
  const plan::PlanResult one = plan::search_plans(in.cluster, in.model, in.simulator, in.options);
  plan::BatchAdvice advice;
  advice.found = true;
  advice.global_batch = 48;
  advice.fraction_of_upper_bound = 0.925;
  advice.step = 8;
  CHECK(plan::format_batch_warning(1, one, advice, 0.9).find(
            "; global batch 48 is the smallest multiple of 8 that reaches 90% (92.5%)\n") != std::string::npos);
  advice.step = 1;
  CHECK(plan::format_batch_warning(1, one, advice, 0.9).find("; global batch 48 is the smallest that reaches 90% (92.5%)\n") !=
        std::string::npos);
}

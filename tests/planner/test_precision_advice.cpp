// File: test_precision_advice.cpp
// Precision advice on a tiny V100 cluster (2 V100-SXM2-16GB, no bf16 units) with gpt2-124m in
// bf16: bf16 is priced at fp32 there, the frameworks train fp16, and the advice's speedup is
// the ratio of the two searches' simulated throughputs; --precision auto takes fp16, a forced
// precision is planned alone, and the exports write fp16.
#include <doctest/doctest.h>

#include "planner_fixtures.h"
#include "whale/plan/export.h"
#include "whale/plan/precision_advice.h"

using namespace whale;

namespace {

plan::PlannerOptions small_batch() {
  plan::PlannerOptions o;
  o.global_batch = 16;
  return o;
}

}  // namespace

TEST_CASE("bf16 on V100s: the advice plans fp16 too, and its speedup is the throughput ratio") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("tiny_v100.yaml", test::kTinyV100));
  plan::Model bf16 = test::shipped_model("gpt2-124m");
  REQUIRE(bf16.training.precision == plan::Precision::bf16);
  plan::Model fp16 = bf16;
  fp16.training.precision = plan::Precision::fp16;
  const sim::Simulator simulator;
  const plan::PlanResult planned = plan::search_plans(cluster, bf16, simulator, small_batch());
  const plan::PlanResult direct = plan::search_plans(cluster, fp16, simulator, small_batch());

  const plan::PrecisionAdvice advice = plan::advise_precision(cluster, bf16, simulator, small_batch(), planned);
  REQUIRE(advice.applies);
  REQUIRE(advice.substitute_found);
  CHECK(advice.planned == plan::Precision::bf16);
  CHECK(advice.substitute == plan::Precision::fp16);
  CHECK(advice.device_models == std::vector<std::string>{"v100-sxm2-16gb"});
  CHECK(advice.substitute_result.best().estimate.samples_per_s == direct.best().estimate.samples_per_s);
  CHECK(advice.speedup == direct.best().estimate.samples_per_s / planned.best().estimate.samples_per_s);
  // fp16 runs on the tensor cores (125 TFLOP/s against 15.7 at fp32): much faster.
  CHECK(advice.speedup > 2.0);
  CHECK(advice.substitute_better);

  const std::string warning = plan::format_precision_warning(advice, planned);
  CHECK(warning.rfind("warning: v100-sxm2-16gb has no bf16 units (bf16 GEMMs are priced at fp32 there); the "
                      "frameworks train fp16 with dynamic loss scaling", 0) == 0);
  char speedup[32];
  std::snprintf(speedup, sizeof speedup, "is %.3gx as fast", advice.speedup);
  CHECK(warning.find(speedup) != std::string::npos);
  CHECK(warning.find("pass --precision fp16 or --precision auto") != std::string::npos);
  // Same devices, same price per hour: the cost per token falls by the same factor.
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, "at %.3gx bf16's USD per 1M tokens", 1.0 / advice.speedup);
  CHECK(warning.find(ratio) != std::string::npos);
  CHECK(warning.find("cut") == std::string::npos);   // the search was complete
  CHECK(warning.back() == '\n');

  // A substitute search that stopped short says so beside its figures.
  plan::PrecisionAdvice capped = advice;
  capped.substitute_result.stats.capped = true;
  capped.substitute_result.stats.max_evaluations = 5000;
  const std::string cut_warning = plan::format_precision_warning(capped, planned);
  CHECK(cut_warning.find(std::string(ratio) +
                         "; that search was cut (at 5000 layouts a round): its plan is the best it found; pass "
                         "--precision fp16") != std::string::npos);
  plan::PrecisionAdvice timed = advice;
  timed.substitute_result.stats.timed_out = true;
  CHECK(plan::format_precision_choice(timed, planned).find("; that search was cut (by the time limit): its plan is "
                                                           "the best it found; ranked by throughput)") !=
        std::string::npos);

  // Within 1% of each other the ratio is said as a percentage, never "1x as fast".
  struct SpeedCase {
    double speedup;
    bool warning;  // format_precision_warning, else format_precision_choice
    const char* said;
  };
  for (const SpeedCase& c : {SpeedCase{1.000077, true, "the best plan in fp16 is 0.0077% faster ("},
                             SpeedCase{0.997, false, "the best plan in fp16 is 0.3% slower than in bf16"},
                             SpeedCase{1.0, false, "the best plan in fp16 is as fast as in bf16"},
                             SpeedCase{0.85, false, "the best plan in fp16 is 0.85x as fast as in bf16"}}) {
    plan::PrecisionAdvice close = advice;
    close.speedup = c.speedup;
    const std::string line = c.warning ? plan::format_precision_warning(close, planned)
                                       : plan::format_precision_choice(close, planned);
    CHECK_MESSAGE(line.find(c.said) != std::string::npos, line);
  }
}

TEST_CASE("--precision auto takes the faster precision; a forced one is planned alone") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("tiny_v100.yaml", test::kTinyV100));
  const sim::Simulator simulator;
  const plan::Model shipped = test::shipped_model("gpt2-124m");

  plan::Model model = shipped;
  std::string note;
  plan::PrecisionRequest automatic;
  REQUIRE(plan::parse_precision_request("auto", &automatic));
  const plan::PlanResult chosen = plan::search_with_precision(cluster, model, simulator, small_batch(), automatic, &note);
  CHECK(model.training.precision == plan::Precision::fp16);
  CHECK(chosen.best().plan.precision == plan::Precision::fp16);
  CHECK(note.rfind("precision auto: fp16 (v100-sxm2-16gb has no bf16 units; the best plan in fp16 is ", 0) == 0);

  plan::Model forced_model = shipped;
  plan::PrecisionRequest forced;
  REQUIRE(plan::parse_precision_request("bf16", &forced));
  const plan::PlanResult kept = plan::search_with_precision(cluster, forced_model, simulator, small_batch(), forced, &note);
  CHECK(note.empty());   // forced: no second search, no advice
  CHECK(kept.best().plan.precision == plan::Precision::bf16);
  CHECK(chosen.best().estimate.samples_per_s > kept.best().estimate.samples_per_s);

  // Without a bf16 model there is nothing to advise: fp32 runs natively on a V100.
  plan::Model fp32 = shipped;
  fp32.training.precision = plan::Precision::fp32;
  plan::PrecisionRequest from_model;
  const plan::PlanResult plain = plan::search_with_precision(cluster, fp32, simulator, small_batch(), from_model, &note);
  CHECK(note.empty());
  CHECK_FALSE(plan::advise_precision(cluster, fp32, simulator, small_batch(), plain).applies);
  CHECK_FALSE(plan::parse_precision_request("tf32", &forced));
}

TEST_CASE("the exports train a V100 plan in fp16, whether planned in bf16 or in fp16") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("tiny_v100.yaml", test::kTinyV100));
  const sim::Simulator simulator;
  for (const plan::Precision p : {plan::Precision::bf16, plan::Precision::fp16}) {
    CAPTURE(plan::to_string(p));
    plan::Model model = test::shipped_model("gpt2-124m");
    model.training.precision = p;
    const plan::Plan best = plan::search_plans(cluster, model, simulator, small_batch()).best().plan;
    const std::string megatron = plan::megatron_arguments(best);
    CHECK(megatron.find("  --fp16\n") != std::string::npos);
    CHECK(megatron.find("--bf16") == std::string::npos);
    const std::string deepspeed = plan::deepspeed_config(best);
    CHECK(deepspeed.find("\"fp16\": {\"enabled\": true, \"loss_scale\": 0}") != std::string::npos);
    CHECK(deepspeed.find("bf16") == std::string::npos);
  }
}

// File: test_export_expressible.cpp
// expressible_variant: a plan made one Megatron-LM or DeepSpeed can run, setting by setting,
// on the tiny Llama's shipped plans for cpu-local-8 and on a 12-block GPT-2 laid out by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "planner_fixtures.h"
#include "whale/plan/export.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

plan::RankedPlan ranked(const std::string& shipped_plan) {
  plan::RankedPlan r;
  r.plan = plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/" + shipped_plan);
  r.label = "shipped";
  return r;
}

bool every_stage(const plan::Plan& p, const std::function<bool(const plan::Stage&)>& holds) {
  return std::all_of(p.stages.begin(), p.stages.end(), holds);
}

}  // namespace

TEST_CASE("a plan either framework runs already comes back as it is, not estimated again") {
  const sim::Simulator simulator;
  const plan::RankedPlan single = ranked("tiny-llama/single.yaml");
  for (const plan::Framework f : {plan::Framework::megatron, plan::Framework::deepspeed}) {
    const auto variant = plan::expressible_variant(single, simulator, f);
    REQUIRE(variant);
    CHECK(variant->label == "shipped");
    CHECK(variant->estimate.step_time_s == 0);
  }
}

TEST_CASE("uneven shares, two recomputation settings: even shares and the faster setting that fits") {
  // hybrid-uneven: two stages of two tp-2 replicas sharing each micro-batch of 4 as 3:1, stage 0
  // recomputing fully, stage 1 selectively. Both settings fit the 8 GiB CPU devices; selective
  // recomputes less than full, so Megatron-LM takes it; DeepSpeed checkpoints whole layers
  // (full). The shares become 2, 2.
  const sim::Simulator simulator;
  const plan::RankedPlan hybrid = ranked("tiny-llama/hybrid-uneven.yaml");
  const auto megatron = plan::expressible_variant(hybrid, simulator, plan::Framework::megatron);
  REQUIRE(megatron);
  CHECK(plan::export_limits(megatron->plan, plan::Framework::megatron).empty());
  CHECK(every_stage(megatron->plan, [](const plan::Stage& s) {
    return s.recompute == plan::Recompute::selective && s.shares == std::vector<int>{2, 2} && s.shard_optimizer;
  }));
  CHECK(megatron->label == "shipped as Megatron-LM runs it (even shares, recompute selective in every stage)");
  CHECK(megatron->estimate.fits);
  CHECK(megatron->estimate.step_time_s > 0);
  const auto deepspeed = plan::expressible_variant(hybrid, simulator, plan::Framework::deepspeed);
  REQUIRE(deepspeed);
  CHECK(every_stage(deepspeed->plan, [](const plan::Stage& s) { return s.recompute == plan::Recompute::full; }));
  CHECK(deepspeed->label == "shipped as DeepSpeed runs it (even shares, recompute full in every stage)");
  // Full recomputation re-runs every block's forward: slower than selective.
  CHECK(deepspeed->estimate.step_time_s > megatron->estimate.step_time_s);
}

TEST_CASE("zb-h1 and gpipe pipelines run as 1f1b; sequence parallelism is Megatron-LM's alone") {
  // tp2-pp2-zb-h1-sp: stage 0 recomputes nothing, stage 1 selectively; recomputing nothing is
  // faster and fits, so both frameworks take it. pp2-gpipe-untied: no recomputation anywhere.
  struct Case {
    const char* shipped;
    const char* megatron;
    const char* deepspeed;
  };
  const sim::Simulator simulator;
  for (const Case& c : {Case{"tiny-llama/tp2-pp2-zb-h1-sp.yaml", "(1f1b, recompute none in every stage)",
                             "(1f1b, no sequence parallelism, recompute none in every stage)"},
                        Case{"tiny-llama/pp2-gpipe-untied.yaml", "(1f1b)", "(1f1b)"}}) {
    CAPTURE(c.shipped);
    const plan::RankedPlan r = ranked(c.shipped);
    const bool sp = r.plan.stages.front().sequence_parallel;
    const auto megatron = plan::expressible_variant(r, simulator, plan::Framework::megatron);
    REQUIRE(megatron);
    CHECK(megatron->plan.schedule.kind == plan::ScheduleKind::one_f_one_b);
    CHECK(megatron->label == std::string("shipped as Megatron-LM runs it ") + c.megatron);
    CHECK(every_stage(megatron->plan, [&](const plan::Stage& s) { return s.sequence_parallel == sp; }));
    const auto deepspeed = plan::expressible_variant(r, simulator, plan::Framework::deepspeed);
    REQUIRE(deepspeed);
    CHECK(deepspeed->plan.schedule.kind == plan::ScheduleKind::one_f_one_b);
    CHECK(every_stage(deepspeed->plan, [](const plan::Stage& s) { return !s.sequence_parallel; }));
    CHECK(deepspeed->label == std::string("shipped as DeepSpeed runs it ") + c.deepspeed);
    for (const auto* variant : {&*megatron, &*deepspeed}) {
      CHECK(every_stage(variant->plan, [](const plan::Stage& s) { return s.recompute == plan::Recompute::none; }));
    }
  }
}

TEST_CASE("stages of different dp x tp take each stage's degrees in turn; waves and mixed tp are refused") {
  const sim::Simulator simulator;
  // hybrid-uneven with stage 1 at dp 4 x tp 1 (one sample each): both (2, 2) and (4, 1) fit
  // every stage's four devices of one node; the variant runs one of them in both stages.
  plan::RankedPlan mixed = ranked("tiny-llama/hybrid-uneven.yaml");
  mixed.plan.stages[1].tp = 1;
  mixed.plan.stages[1].shares = {1, 1, 1, 1};
  const auto variant = plan::expressible_variant(mixed, simulator, plan::Framework::megatron);
  REQUIRE(variant);
  const plan::Stage& first = variant->plan.stages.front();
  CHECK(((first.dp() == 2 && first.tp == 2) || (first.dp() == 4 && first.tp == 1)));
  CHECK(every_stage(variant->plan, [&](const plan::Stage& s) { return s.dp() == first.dp() && s.tp == first.tp; }));
  CHECK(variant->label.find("in every stage") != std::string::npos);
  for (const char* refused : {"tiny-llama/wave-tied-dp2.yaml", "tiny-llama/mixed-tp-pp2.yaml"}) {
    CAPTURE(refused);
    CHECK_FALSE(plan::expressible_variant(ranked(refused), simulator, plan::Framework::megatron));
    CHECK_FALSE(plan::expressible_variant(ranked(refused), simulator, plan::Framework::deepspeed));
  }
}

TEST_CASE("the layer split each framework places: Megatron-LM's even middle stages, DeepSpeed's even stages") {
  // GPT-2 124M (12 blocks) in four single-device stages of cpu-local-8, blocks 2, 4, 3, 3:
  // Megatron-LM's middle stages take floor or ceil of 12 / 4 = 3, the first and the last the
  // other 6 halved (3, 3, 3, 3); DeepSpeed's four stages 3 each.
  const sim::Simulator simulator;
  plan::RankedPlan r = ranked("tiny-llama/single.yaml");
  r.plan.model = test::shipped_model("gpt2-124m");
  r.plan.micro_batch_size = 1;
  r.plan.micro_batches = 8;
  const std::vector<int> blocks_at = {2, 4, 3, 3};
  const plan::Stage one = r.plan.stages.front();
  r.plan.stages.clear();
  int first = 0;
  const int layers = static_cast<int>(r.plan.model.layers.size());   // embedding, 12 blocks, head
  REQUIRE(layers == 14);
  for (int s = 0; s < 4; ++s) {
    plan::Stage stage = one;
    stage.devices = {s};
    stage.shares = {1};
    stage.first_layer = first;
    first += blocks_at[s] + (s == 0 ? 1 : 0) + (s == 3 ? 1 : 0);
    stage.end_layer = first;
    r.plan.stages.push_back(stage);
  }
  REQUIRE(first == layers);
  const auto megatron = plan::expressible_variant(r, simulator, plan::Framework::megatron);
  REQUIRE(megatron);
  CHECK(megatron->label == "shipped as Megatron-LM runs it (layers first 3, middle 3, last 3)");
  const auto deepspeed = plan::expressible_variant(r, simulator, plan::Framework::deepspeed);
  REQUIRE(deepspeed);
  CHECK(deepspeed->label == "shipped as DeepSpeed runs it (layers 3 a stage)");
  for (const auto& variant : {*megatron, *deepspeed}) {
    CHECK(variant.plan.stages[0].first_layer == 0);
    CHECK(variant.plan.stages[0].end_layer == 4);    // the embedding and 3 blocks
    CHECK(variant.plan.stages[3].end_layer == layers);
    CHECK(variant.plan.stages[3].first_layer == 10); // 3 blocks and the head
  }
}

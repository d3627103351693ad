// File: test_export_choice.cpp
// Which plan a constrained export takes: DeepSpeed, which places no stage boundaries, gets a
// uniform plan whose pipeline depth divides the transformer layers where the planner's
// baseline has another depth; a mixture-of-experts model gets DeepSpeed's one reason; and
// choosing an export writes no file.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "planner_fixtures.h"
#include "whale/plan/error.h"
#include "whale/plan/export.h"

using namespace whale;

namespace {
// Four nodes of three V100s: at a global batch of 12 the best uniform plan of Llama-2 7B is
// pp 3 x dp 4, whose 32 layers split 10, 11, 11.
constexpr const char* kFourNodesOfThree = R"(name: four-by-three
network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}
nodes:
  - {name: n1, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}
  - {name: n2, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}
  - {name: n3, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}
  - {name: n4, devices: [{model: v100-sxm2-16gb, count: 3}], intra_link: {kind: nvlink, bandwidth_gbps: 1200, latency_us: 3}}
)";
}  // namespace

TEST_CASE("a constrained DeepSpeed export searches the pipeline depths that divide the layers") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("four_by_three.yaml", kFourNodesOfThree));
  const plan::Model model = test::shipped_model("llama2-7b");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 12;
  const plan::PlanResult result = plan::search_plans(cluster, model, simulator, o);
  REQUIRE(result.baseline_found);
  REQUIRE(result.baseline.label == "uniform pp3 tp1 dp4");
  REQUIRE_FALSE(plan::export_limits(result.best().plan, plan::Framework::deepspeed).empty());
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_choice.json";
  std::filesystem::remove(file);
  const plan::ChosenExport chosen =
      plan::choose_export(result, cluster, model, simulator, o, plan::Framework::deepspeed, true, file);
  CHECK_FALSE(std::filesystem::exists(file));
  CHECK(chosen.report.find("exported instead, the fastest plan it can express, uniform pp4 tp1 dp3: ") !=
        std::string::npos);
  CHECK(chosen.report.find(": " + file + "\n") != std::string::npos);
  CHECK(chosen.text.find("\"pipeline\": {\"stages\": 4,") != std::string::npos);
  // Megatron-LM's first and last stages may differ: it keeps the planner's depth, its plan of
  // three stages of four V100s (as fast as the baseline uniform pp3 tp1 dp4 and ranked first).
  const plan::ChosenExport megatron =
      plan::choose_export(result, cluster, model, simulator, o, plan::Framework::megatron, true, file);
  CHECK(megatron.report.find("exported instead, the fastest plan it can express, p3 tp[v100-sxm2-16gb:1]: ") !=
        std::string::npos);
  CHECK(megatron.text.find("--pipeline-model-parallel-size 3\n") != std::string::npos);
}

TEST_CASE("a constrained export takes a uniform plan on fewer devices where none of every device divides the batch") {
  // cpu-local-8 and the tiny Llama (two blocks, 2 key-value heads: tp <= 2) at a global batch
  // of 5: the uniform pipelines of all 8 devices have dp 8, 4 or 2, none dividing 5; dp 5 on
  // the first 5 devices does (pp 1, tp 1), the other 3 idle.
  const plan::Cluster cluster = test::shipped_cluster("cpu-local-8");
  const plan::Model model = test::shipped_model("tiny-llama");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 5;
  const plan::PlanResult result = plan::search_plans(cluster, model, simulator, o);
  REQUIRE_FALSE(result.baseline_found);
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_choice_fewer.sh";
  for (const plan::Framework framework : {plan::Framework::megatron, plan::Framework::deepspeed}) {
    CAPTURE(plan::to_string(framework));
    REQUIRE_FALSE(plan::export_limits(result.best().plan, framework).empty());
    const plan::ChosenExport chosen = plan::choose_export(result, cluster, model, simulator, o, framework, true, file);
    CHECK(chosen.report.find("exported instead, the fastest plan it can express, uniform pp1 tp1 dp5 on 5 of the 8 "
                             "devices: ") != std::string::npos);
  }
  const plan::ChosenExport megatron =
      plan::choose_export(result, cluster, model, simulator, o, plan::Framework::megatron, true, file);
  CHECK(megatron.text.find("run on devices 0-4.") != std::string::npos);
}

TEST_CASE("a constrained export takes one device model's devices alone, or fewer of them") {
  // Three nodes of one B200 beside two nodes of eight V100s (bf16, priced at fp32 there), a
  // five-block GPT at a global batch of 256: the best plan pipelines the B200s in three stages,
  // which DeepSpeed cannot split five blocks by. DeepSpeed's pipeline depth divides the 5
  // blocks (1 or 5) and dp the 256 samples: of the three B200s (tp 1, one a node) pp 1 at dp 3
  // does not divide 256, so the B200s alone run dp 2 on 2 of them, the largest such count.
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("b200_v100.yaml", R"(name: b200-v100
nodes:
  - name: b200
    count: 3
    devices: [{model: b200, count: 1}]
    intra_link: {kind: nvlink, bandwidth_gbps: 7200, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 400, latency_us: 5}
  - name: v100
    count: 2
    devices: [{model: v100-sxm2-32gb, count: 8}]
    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 100, latency_us: 5}
)"));
  const plan::Model model = plan::load_model(test::temp_file("gpt_five_blocks.yaml", R"(name: five
family: gpt
layers: 5
hidden: 7680
heads: 96
sequence: 8192
vocabulary: 32000
training: {global_batch: 256, precision: bf16, optimizer: adamw}
)"));
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  const plan::PlanResult result = plan::search_plans(cluster, model, simulator, o);
  REQUIRE(result.best().plan.stages.size() == 3);
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_choice_alone.json";
  const plan::ChosenExport chosen =
      plan::choose_export(result, cluster, model, simulator, o, plan::Framework::deepspeed, true, file);
  CHECK(chosen.report.find("exported instead, the fastest plan it can express, uniform pp1 tp1 dp2 on 2 of the 3 "
                           "devices of the b200 alone (devices 0-2)") != std::string::npos);
  CHECK(chosen.text.find("\"train_micro_batch_size_per_gpu\": ") != std::string::npos);
}

TEST_CASE("a constrained export keeps to the budget") {
  // Four CPU cores and four of half their speed at 1 USD an hour each, the tiny GPT at batch 8.
  // Without a budget Megatron-LM gets the four fast cores alone (4 USD an hour); under a budget
  // of 3 no plan of four devices is allowed, and the uniform pipeline of the first three is
  // exported (as the baseline under that budget).
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("priced_two_models.yaml", R"(name: priced-two-models
nodes:
  - name: local
    devices:
      - {model: cpu, count: 4, price_per_hour_usd: 1}
      - {model: cpu-slow2x, count: 4, price_per_hour_usd: 1}
    intra_link: {kind: shm, bandwidth_gbps: 80, latency_us: 2}
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}
)"));
  const plan::Model model = test::shipped_model("tiny");
  const sim::Simulator simulator;
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_choice_budget.sh";
  plan::PlannerOptions o;
  o.global_batch = 8;
  const plan::PlanResult free = plan::search_plans(cluster, model, simulator, o);
  const plan::ChosenExport any =
      plan::choose_export(free, cluster, model, simulator, o, plan::Framework::megatron, true, file);
  CHECK(any.text.find("run on devices 0-3.") != std::string::npos);
  o.budget_usd_per_hour = 3;
  const plan::PlanResult held = plan::search_plans(cluster, model, simulator, o);
  const plan::ChosenExport within =
      plan::choose_export(held, cluster, model, simulator, o, plan::Framework::megatron, true, file);
  CHECK(within.report.find("exported instead, the fastest plan it can express, uniform pp3 tp1 dp1: ") !=
        std::string::npos);
  CHECK(within.text.find("run on devices 0-2.") != std::string::npos);
}

TEST_CASE("a constrained DeepSpeed export of a mixture-of-experts model names the model, not the plan's limits") {
  const plan::Cluster cluster = test::shipped_cluster("cpu-local-4");
  const plan::Model model = test::shipped_model("tiny-moe");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 8;
  const plan::PlanResult result = plan::search_plans(cluster, model, simulator, o);
  const std::string file = std::string(WHALE_BINARY_DIR) + "/test_export_choice_moe.json";
  try {
    plan::choose_export(result, cluster, model, simulator, o, plan::Framework::deepspeed, true, file);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.yaml_path() == "--export-deepspeed");
    CHECK(std::string(e.what()).find("a dense model (DeepSpeed's config describes dense layers; its MoE layers are "
                                     "built in the model code, deepspeed.moe), got the mixture-of-experts model "
                                     "'tiny-moe'") != std::string::npos);
    CHECK(std::string(e.what()).find("stage 1") == std::string::npos);   // no limit of the best plan
    CHECK(e.hint() == "export the plan with --export-megatron (Megatron-Core's MoE arguments)");
  }
  CHECK_FALSE(std::filesystem::exists(file));
}

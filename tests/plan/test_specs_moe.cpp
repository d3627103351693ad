// File: test_specs_moe.cpp
// The mixture-of-experts spec: the model's moe block read with its defaults, saved and read back,
// the rules of find_moe_problem, and the plan's ep, expert_tp and expert_counts (layout, round
// trip, errors, export limits).
#include <doctest/doctest.h>

#include <algorithm>

#include "test_specs_util.h"
#include "whale/plan/export.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
using whale::plan::testing::expect_error;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

namespace {

const std::string kMoeModel =
    "name: moe\nfamily: llama\nlayers: 4\nhidden: 64\nheads: 4\nffn_hidden: 176\nsequence: 32\n"
    "vocabulary: 256\nmoe: {experts: 8, top_k: 2}\n"
    "training: {global_batch: 8, precision: fp32}\n";

const std::string kCluster =
    "name: eight\nnetwork: {kind: shm, bandwidth_gbps: 40, latency_us: 1}\n"
    "nodes:\n  - {name: n, devices: [{model: cpu, count: 8}], intra_link: {kind: shm, bandwidth_gbps: 40, latency_us: 1}}\n";

std::string plan_with_stage(const std::string& stage) {
  return "cluster: cluster.yaml\nmodel: model.yaml\nmicro_batch_size: 4\nmicro_batches: 2\n"
         "schedule: 1f1b\nstages:\n  - " + stage + "\n";
}

/// Writes the cluster, the model and moe-plan/<name> of one stage `stage`, and loads the plan.
Plan load_stage_plan(const std::string& name, const std::string& stage) {
  scratch_file("moe-plan/cluster.yaml", kCluster);
  scratch_file("moe-plan/model.yaml", kMoeModel);
  return load_plan(scratch_file("moe-plan/" + name, plan_with_stage(stage)), source_path("profiles"));
}

}  // namespace

TEST_CASE("moe: the optional fields take their documented defaults") {
  const Model model = load_model(scratch_file("moe/defaults.yaml", kMoeModel));
  REQUIRE(model.moe);
  CHECK(model.moe->experts == 8);
  CHECK(model.moe->top_k == 2);
  CHECK(model.moe->shared_experts == 0);
  CHECK(model.moe->expert_ffn_hidden == 176);  // the model's ffn_hidden
  CHECK(model.moe->capacity_factor == 0);      // dropless
  CHECK(model.moe->router == MoeRouter::softmax_topk);
  CHECK(model.moe->aux_loss_coeff == 0);
  CHECK(model.moe->bias_update_rate == 0.001);  // DeepSeek-V3's
  CHECK(model.moe->first_dense_layers == 0);
  CHECK(model.moe->layer_interval == 1);
  CHECK(model.moe->load_imbalance == 1.0);
  CHECK_FALSE(load_model("configs/models/tiny.yaml").moe);
}

TEST_CASE("moe: every field survives a save and a load") {
  std::string text = kMoeModel;
  const std::string all =
      "moe: {experts: 16, top_k: 4, shared_experts: 2, expert_ffn_hidden: 96, capacity_factor: 1.25, "
      "router: sigmoid_bias, aux_loss_coeff: 0.001, bias_update_rate: 0.002, first_dense_layers: 1, layer_interval: 2, "
      "load_imbalance: 1.5}";
  text.replace(text.find("moe: {experts: 8, top_k: 2}"), 27, all);
  const Model model = load_model(scratch_file("moe/all.yaml", text));
  const std::string saved = scratch_file("moe/saved.yaml", "");
  save_model(model, saved);
  const Model back = load_model(saved);
  REQUIRE(back.moe);
  CHECK(back.moe->experts == 16);
  CHECK(back.moe->top_k == 4);
  CHECK(back.moe->shared_experts == 2);
  CHECK(back.moe->expert_ffn_hidden == 96);
  CHECK(back.moe->capacity_factor == 1.25);
  CHECK(back.moe->router == MoeRouter::sigmoid_bias);
  CHECK(back.moe->aux_loss_coeff == 0.001);
  CHECK(back.moe->bias_update_rate == 0.002);
  CHECK(back.moe->first_dense_layers == 1);
  CHECK(back.moe->layer_interval == 2);
  CHECK(back.moe->load_imbalance == 1.5);
  // Blocks 1 and 3 of 4 are MoE: the first is dense, then every other.
  CHECK_FALSE(back.moe->is_moe_block(0));
  CHECK(back.moe->is_moe_block(1));
  CHECK_FALSE(back.moe->is_moe_block(2));
  CHECK(back.moe->is_moe_block(3));
}

TEST_CASE("moe: find_moe_problem names the first field that breaks a rule") {
  MoeSpec spec;
  spec.experts = 8;
  spec.top_k = 2;
  spec.expert_ffn_hidden = 16;
  CHECK_FALSE(find_moe_problem(spec, 4));
  auto field_of = [](MoeSpec s, int blocks) {
    const auto problem = find_moe_problem(s, blocks);
    return problem ? problem->field : std::string("none");
  };
  MoeSpec bad = spec;
  bad.experts = 1;
  CHECK(field_of(bad, 4) == "experts");
  bad = spec;
  bad.top_k = 9;
  CHECK(field_of(bad, 4) == "top_k");
  bad.top_k = 8;  // every expert: allowed
  CHECK(field_of(bad, 4) == "none");
  bad = spec;
  bad.capacity_factor = -0.5;
  CHECK(field_of(bad, 4) == "capacity_factor");
  bad = spec;
  CHECK(field_of(bad, 0) == "first_dense_layers");  // no block left to be MoE
  bad.layer_interval = 0;
  CHECK(field_of(bad, 4) == "layer_interval");
  bad = spec;
  bad.load_imbalance = 4.0;  // experts / top_k: the busiest expert takes every token
  CHECK(field_of(bad, 4) == "none");
  bad.load_imbalance = 4.01;
  CHECK(field_of(bad, 4) == "load_imbalance");
}

TEST_CASE("moe plan: ep and expert_tp read, default, lay out the devices and round-trip") {
  scratch_file("moe-plan/cluster.yaml", kCluster);
  scratch_file("moe-plan/model.yaml", kMoeModel);
  const std::string path = scratch_file("moe-plan/plan.yaml", plan_with_stage("{layers: [0, 5], devices: \"0-7\", tp: 2, ep: 4, expert_tp: 1}"));
  const Plan plan = load_plan(path, source_path("profiles"));
  const Stage& stage = plan.stages[0];
  CHECK(stage.ep == 4);
  CHECK(stage.expert_tp_degree() == 1);
  CHECK(stage.expert_dp() == 2);
  // Expert ranks are expert-tp-major: replica d, ep rank e, expert-tp rank t at (d*ep + e)*etp + t.
  CHECK(stage.expert_parallel_group(0, 0) == std::vector<int>{0, 1, 2, 3});
  CHECK(stage.expert_parallel_group(1, 0) == std::vector<int>{4, 5, 6, 7});
  // The same ep rank in each expert-dp replica.
  CHECK(stage.expert_data_parallel_group(0, 0) == std::vector<int>{0, 4});
  CHECK(stage.expert_data_parallel_group(3, 0) == std::vector<int>{3, 7});
  const std::string saved = scratch_file("moe-plan/saved.yaml", "");
  save_plan(plan, saved, false);
  const Plan back = load_plan(saved, source_path("profiles"));
  CHECK(back.stages[0].ep == 4);
  CHECK(back.stages[0].expert_tp == 1);

  const Plan folded = load_plan(scratch_file("moe-plan/folded.yaml", plan_with_stage("{layers: [0, 5], devices: \"0-7\", tp: 2, ep: 2}")),
                                source_path("profiles"));
  CHECK(folded.stages[0].expert_tp == 0);
  CHECK(folded.stages[0].expert_tp_degree() == 2);  // the stage's tp
  CHECK(folded.stages[0].expert_dp() == 2);
  CHECK(folded.stages[0].expert_parallel_group(1, 1) == std::vector<int>{5, 7});
  CHECK(folded.stages[0].expert_data_parallel_group(1, 1) == std::vector<int>{3, 7});
  CHECK(plan_to_yaml(folded, false).find("expert_tp") == std::string::npos);
}

TEST_CASE("moe plan: a bad expert layout fails at the stage's field") {
  scratch_file("moe-plan/cluster.yaml", kCluster);
  scratch_file("moe-plan/model.yaml", kMoeModel);
  const auto error_of = [](const std::string& name, const std::string& stage) {
    return expect_error([&] { load_plan(scratch_file("moe-plan/" + name, plan_with_stage(stage)), source_path("profiles")); });
  };
  whale::Error e = error_of("ep3.yaml", "{layers: [0, 5], devices: \"0-3\", tp: 1, ep: 3}");
  CHECK(e.yaml_path() == "stages[0].ep");
  CHECK(std::string(e.what()).find("ep 3 does not divide the model's 8 experts") != std::string::npos);
  e = error_of("ep8tp2.yaml", "{layers: [0, 5], devices: \"0-7\", tp: 2, ep: 8}");
  CHECK(e.yaml_path() == "stages[0].ep");
  CHECK(std::string(e.what()).find("ep 8 x expert_tp 2 = 16 does not divide the stage's 8 devices") != std::string::npos);
  e = error_of("etp3.yaml", "{layers: [0, 5], devices: \"0-3\", tp: 1, ep: 2, expert_tp: 4}");
  CHECK(e.yaml_path() == "stages[0].expert_tp");
}

TEST_CASE("moe plan: expert_counts read, place the experts, round-trip, and stay out when even") {
  // 8 experts over ep 3 (3 does not divide 8: the counts split them).
  const Plan plan = load_stage_plan("counts.yaml", "{layers: [0, 5], devices: \"0-5\", tp: 2, shares: [2, 1, 1], ep: 3, expert_tp: 1, expert_counts: [4, 3, 1]}");
  const Stage& stage = plan.stages[0];
  CHECK(stage.expert_counts == std::vector<int>{4, 3, 1});
  CHECK(stage.experts_held(1, 8) == 3);
  CHECK(stage.first_expert_held(0, 8) == 0);
  CHECK(stage.first_expert_held(2, 8) == 7);
  // Devices 0-5 at expert_tp 1: ep ranks 0, 1, 2, 0, 1, 2.
  CHECK(stage.ep_rank_of(4) == 1);
  const std::string saved = scratch_file("moe-plan/counts-saved.yaml", "");
  save_plan(plan, saved, false);
  CHECK(load_plan(saved, source_path("profiles")).stages[0].expert_counts == std::vector<int>{4, 3, 1});
  // Absent: experts / ep each, and nothing written back.
  const Plan even = load_stage_plan("even.yaml", "{layers: [0, 5], devices: \"0-3\", tp: 1, ep: 2}");
  CHECK(even.stages[0].expert_counts.empty());
  CHECK(even.stages[0].experts_held(1, 8) == 4);
  CHECK(even.stages[0].first_expert_held(1, 8) == 4);
  CHECK(plan_to_yaml(even, false).find("expert_counts") == std::string::npos);
}

TEST_CASE("moe plan: bad expert_counts fail at the stage's field") {
  const auto message_of = [](const std::string& name, const std::string& counts) {
    const whale::Error e = expect_error(
        [&] { load_stage_plan(name, "{layers: [0, 5], devices: \"0-3\", tp: 1, ep: 2, expert_counts: " + counts + "}"); });
    CHECK(e.yaml_path() == "stages[0].expert_counts");
    return std::string(e.what());
  };
  CHECK(message_of("c-length.yaml", "[8]").find("expected 2 counts (ep 2), got 1") != std::string::npos);
  CHECK(message_of("c-zero.yaml", "[8, 0]").find("expected positive counts, got 0") != std::string::npos);
  CHECK(message_of("c-sum.yaml", "[5, 2]").find("the counts sum to 7, not to the model's 8 experts") != std::string::npos);
  CHECK(message_of("c-above.yaml", "[9, -1]").find("count 9 is above the model's 8 experts") != std::string::npos);
}

TEST_CASE("moe plan: the frameworks' exports name uneven expert counts as a limit") {
  const Plan plan = load_plan(source_path("configs/plans/tiny-moe/ep2-uneven.yaml"), source_path("profiles"));
  const std::string limit = "stage 0 has uneven expert counts 3,1: every expert-parallel rank holds experts / ep";
  for (Framework framework : {Framework::megatron, Framework::deepspeed}) {
    const std::vector<std::string> limits = export_limits(plan, framework);
    CHECK(std::find(limits.begin(), limits.end(), limit) != limits.end());
  }
}

// File: test_moe_layers.cpp
// The layers of a mixture-of-experts model by hand (a tiny llama with 4 experts), the expert
// layout's per-device view (moe_layer.h), the Hugging Face MoE configs' parameter counts against
// the published ones, the errors of configs whale cannot express, and set_sequence.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/export.h"
#include "whale/plan/gradient_buckets.h"
#include "whale/plan/model.h"
#include "whale/plan/moe_layer.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_experts.h"

using namespace whale::plan;
using whale::plan::testing::expect_error;
using whale::plan::testing::scratch_file;

namespace {

// s 4, h 8, 2 heads (kv = h), ffn 16 on the dense block, 4 experts of width 6, top 2, one
// shared expert, fp32 (b = 4); block 0 dense, block 1 MoE.
const std::string kTinyMoe =
    "name: tiny-moe\nfamily: llama\nlayers: 2\nhidden: 8\nheads: 2\nffn_hidden: 16\nsequence: 4\n"
    "vocabulary: 10\nmoe: {experts: 4, top_k: 2, shared_experts: 1, expert_ffn_hidden: 6, "
    "first_dense_layers: 1, load_imbalance: 1.5}\ntraining: {global_batch: 8, precision: fp32}\n";

const GemmOp& gemm_named(const Layer& layer, const std::string& name) {
  for (const GemmOp& g : layer.gemms) {
    if (g.name == name) return g;
  }
  FAIL("no gemm " << name);
  return layer.gemms.front();
}

}  // namespace

TEST_CASE("moe layers: a tiny MoE block by hand") {
  const Model model = load_model(scratch_file("moe-layers/tiny.yaml", kTinyMoe));
  REQUIRE(model.layers.size() == 4);
  const Layer& dense = model.layers[1];
  const Layer& moe = model.layers[2];
  CHECK(dense.experts == 0);
  CHECK(dense.all_to_all_bytes == 0);
  CHECK(moe.experts == 4);
  // Router 4 x 4 x 8, replicated; experts m = s k / E = 2 rows, count 4, grouped; shared as dense.
  const GemmOp& router = gemm_named(moe, "moe_router");
  CHECK((router.m == 4 && router.n == 4 && router.k == 8 && !router.tp_split && !router.expert));
  const GemmOp& gate = gemm_named(moe, "expert_gate");
  CHECK((gate.m == 2 && gate.n == 6 && gate.k == 8 && gate.count == 4 && gate.expert && !gate.tp_split));
  const GemmOp& down = gemm_named(moe, "expert_down");
  CHECK((down.m == 2 && down.n == 8 && down.k == 6 && down.count == 4));
  const GemmOp& shared = gemm_named(moe, "shared_down");
  CHECK((shared.m == 4 && shared.n == 8 && shared.k == 6 && shared.tp_split && !shared.expert));
  bool has_dense_mlp = false;
  for (const GemmOp& g : moe.gemms) has_dense_mlp = has_dense_mlp || g.name.rfind("mlp_", 0) == 0;
  CHECK_FALSE(has_dense_mlp);
  // Parameters: attention 8 x 24 + 64 = 256, norms 16, router 32, experts 4 x 3 x 8 x 6 = 576,
  // shared 3 x 8 x 6 = 144.
  CHECK(moe.parameters == 1024);
  CHECK(moe.expert_parameters == 576);
  CHECK(moe.parameters_replicated == 48);
  // Forward flops of the MLP part: router 256, experts 2 x 2 x 6 x 8 x 4 x 3 = 2304 (= 2 s k h f
  // x 3), shared 2 x 4 x 6 x 8 x 3 = 1152; attention: qkv 2 x 4 x 24 x 8 = 1536, scores and
  // context 2 x 4 x 4 x 4 x 2 = 256 each, out 2 x 4 x 8 x 8 = 512.
  CHECK(moe.forward_flops() == 256 + 2304 + 1152 + 1536 + 256 + 256 + 512);
  // One all-to-all moves s h k elements: 4 x 8 x 2 x 4 bytes; the experts keep s k (h + 3 f).
  CHECK(moe.all_to_all_bytes == 256);
  CHECK(moe.activation_bytes_expert == 8 * (8 + 18) * 4);
  CHECK(moe.expert_load_imbalance == 1.5);
  // A capacity factor caps the busiest expert: 1.25 x the mean at most.
  std::string capped = kTinyMoe;
  capped.replace(capped.find("load_imbalance: 1.5"), 19, "load_imbalance: 1.5, capacity_factor: 1.25");
  CHECK(load_model(scratch_file("moe-layers/capped.yaml", capped)).layers[2].expert_load_imbalance == 1.25);
  CHECK(model.parameter_count() == doctest::Approx(10 * 8 + dense.parameters + 1024 + 8 + 80));
}

TEST_CASE("moe layers: a device's view at tp 2, ep 2, expert_tp 1") {
  const Model model = load_model(scratch_file("moe-layers/tiny.yaml", kTinyMoe));
  const Layer& moe = model.layers[2];
  Stage stage;
  stage.devices = {0, 1, 2, 3};
  stage.tp = 2;
  stage.ep = 2;
  stage.expert_tp = 1;
  // Rows per local expert: 2 x ep 2 x expert_tp 1 / tp 2 = 2 (x 1.5 on the busiest device);
  // 2 of the 4 experts; the FFN unsplit.
  const Layer mean = layer_at_expert_layout(moe, stage, false, 0);
  const GemmOp& gate = gemm_named(mean, "expert_gate");
  CHECK((gate.m == 2 && gate.n == 6 && gate.count == 2 && !gate.tp_split));
  CHECK(gemm_named(layer_at_expert_layout(moe, stage, true, 0), "expert_gate").m == 3);
  // A device's expert flops are the layer's / tp at any layout.
  CHECK(2 * gate.m * gate.n * gate.k * gate.count == 2 * 2 * 6 * 8 * 4 / 2.0);
  // Parameters: dense split (1024 - 48 - 576) / 2 + replicated 48 + experts 576 / (2 x 1).
  CHECK(parameters_per_device(moe, stage) == 200 + 48 + 288);
  CHECK(parameters_per_device(mean, stage.tp) == 200 + 48 + 288);
  CHECK(expert_parameters_per_device(moe, stage, 0) == 288);
  // Kept: input rows s k h b x expert_tp + hidden s k 3f b, both / tp (on split).
  CHECK(mean.activation_bytes_split - moe.activation_bytes_split == 256 + (832 - 256));
  CHECK(all_to_all_bytes_per_device(moe, stage, 3, true) == doctest::Approx(256 * 3 / 2.0 * 1.5));
  // A dense layer is its own view.
  CHECK(layer_at_expert_layout(model.layers[1], stage, true, 0).gemms.size() == model.layers[1].gemms.size());
}

TEST_CASE("moe layers: uneven expert counts, 3 and 1 of the 4 experts at tp 1, ep 2") {
  const Model model = load_model(scratch_file("moe-layers/tiny.yaml", kTinyMoe));
  const Layer& moe = model.layers[2];
  Stage stage;
  stage.devices = {0, 1};
  stage.ep = 2;
  stage.expert_counts = {3, 1};
  CHECK(expert_load_share(stage, 0, 4) == 1.5);  // 3 x ep 2 / 4
  CHECK(expert_load_share(stage, 1, 4) == 0.5);
  CHECK(busiest_ep_rank(stage, 1, 4) == 1);
  CHECK(most_experts_rank(stage, 4) == 0);
  // Each expert takes its mean rows of the group's tokens: 2 per sample x ep 2 = 4 (x 1.5
  // busiest); rank 0 runs 3 experts, rank 1 one.
  const Layer big = layer_at_expert_layout(moe, stage, false, 0);
  const Layer small = layer_at_expert_layout(moe, stage, false, 1);
  CHECK((gemm_named(big, "expert_gate").m == 4 && gemm_named(big, "expert_gate").count == 3));
  CHECK((gemm_named(small, "expert_gate").m == 4 && gemm_named(small, "expert_gate").count == 1));
  CHECK(gemm_named(layer_at_expert_layout(moe, stage, true, 0), "expert_gate").m == 6);
  // Expert flops: the layer's 2 x 2 x 6 x 8 x 4 = 768 per GEMM, x 1.5 on rank 0, x 0.5 on rank 1.
  const GemmOp& gate = gemm_named(big, "expert_gate");
  CHECK(2 * gate.m * gate.n * gate.k * gate.count == 1152);
  // The SwiGLU op: 3 s k f b = 3 x 4 x 2 x 6 x 4 = 576 bytes, x 1.5 (x 1.5 again busiest).
  const auto swiglu_bytes = [](const Layer& layer) {
    for (const MemoryOp& op : layer.memory_ops)
      if (op.name == "expert_swiglu") return op.bytes;
    return 0.0;
  };
  CHECK(swiglu_bytes(big) == 864);
  CHECK(swiglu_bytes(small) == 288);
  CHECK(swiglu_bytes(layer_at_expert_layout(moe, stage, true, 0)) == 1296);
  // Parameters: experts 576 x 3/4 = 432 on rank 0, 144 on rank 1; dense 1024 - 48 - 576 = 400.
  CHECK(expert_parameters_per_device(moe, stage, 0) == 432);
  CHECK(expert_parameters_per_device(moe, stage, 1) == 144);
  CHECK(parameters_per_device(moe, stage, 0) == 400 + 48 + 432);
  CHECK(parameters_per_device(moe, stage, 1) == 400 + 48 + 144);
  CHECK(parameters_per_device(moe, stage) == 400 + 48 + 432);  // the rank holding the most
  CHECK(parameters_per_device(big, stage.tp) == 400 + 48 + 432);
  // Kept: (input 256 + hidden 576) x 1.5 on rank 0, x 0.5 on rank 1.
  CHECK(big.activation_bytes_split - moe.activation_bytes_split == 1248);
  CHECK(small.activation_bytes_split - moe.activation_bytes_split == 416);
  // The all-to-all of 3 samples: each device sends 256 x 3 = 768 bytes; rank 0 receives the
  // tokens of 3 experts, 768 x 1.5 x imbalance 1.5 = 1728, which bounds the collective.
  CHECK(all_to_all_bytes_per_device(moe, stage, 3, false) == 768);
  CHECK(all_to_all_bytes_per_device(moe, stage, 3, true) == 1728);
}

TEST_CASE("moe layers: Hugging Face MoE configs give the published parameter counts") {
  const Model mixtral = load_model("configs/models/hf/mixtral-8x7b-config.json");
  REQUIRE(mixtral.moe);
  CHECK(mixtral.moe->experts == 8);
  CHECK(mixtral.moe->top_k == 2);
  CHECK(mixtral.moe->expert_ffn_hidden == 14336);
  CHECK(mixtral.moe->aux_loss_coeff == 0.02);
  CHECK(mixtral.sequence == 32768);  // max_position_embeddings
  // Jiang et al. 2024 (Mixtral of Experts): 46.7B parameters, 12.9B active per token.
  CHECK(mixtral.parameter_count() == 46702792704.0);
  const Model big = load_model("configs/models/hf/mixtral-8x22b-config.json");
  CHECK(big.parameter_count() == 140620634112.0);  // "141B" (Mistral AI, 2024)
  const Model qwen = load_model("configs/models/hf/qwen2-57b-a14b-config.json");
  REQUIRE(qwen.moe);
  CHECK(qwen.moe->experts == 64);
  CHECK(qwen.moe->top_k == 8);
  CHECK(qwen.moe->expert_ffn_hidden == 2560);
  CHECK(qwen.moe->shared_experts == 8);  // shared_expert_intermediate_size 20480 / 2560
  CHECK(qwen.parameter_count() == 57408558592.0);  // "57B" (Qwen2 model card); the shared
                                                   // expert's 1-wide gate not counted
}

TEST_CASE("moe layers: Qwen-MoE layer patterns, and what whale cannot express") {
  const std::string base =
      "{\"model_type\": \"qwen2_moe\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, "
      "\"num_hidden_layers\": 6, \"max_position_embeddings\": 32, \"vocab_size\": 100, \"num_experts\": 8, "
      "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32";
  Model m = load_model(scratch_file("moe-hf/step2.json", base + ", \"decoder_sparse_step\": 2}"));
  CHECK(m.moe->first_dense_layers == 1);  // blocks 1, 3, 5: (b + 1) % 2 == 0
  CHECK(m.moe->layer_interval == 2);
  CHECK(m.layers[1].experts == 0);
  CHECK(m.layers[2].experts == 8);
  m = load_model(scratch_file("moe-hf/dense2.json", base + ", \"mlp_only_layers\": [0, 1]}"));
  CHECK(m.moe->first_dense_layers == 2);
  whale::Error e = expect_error([&] { load_model(scratch_file("moe-hf/holes.json", base + ", \"mlp_only_layers\": [0, 2]}")); });
  CHECK(e.yaml_path() == "mlp_only_layers");
  e = expect_error([&] { load_model(scratch_file("moe-hf/shared.json", base + ", \"shared_expert_intermediate_size\": 40}")); });
  CHECK(e.yaml_path() == "shared_expert_intermediate_size");
  // A shared expert of no width is none; a negative width is an error naming the field.
  m = load_model(scratch_file("moe-hf/unshared.json", base + ", \"shared_expert_intermediate_size\": 0}"));
  CHECK(m.moe->shared_experts == 0);
  CHECK(m.parameter_count() == load_model(scratch_file("moe-hf/plain.json", base + "}")).parameter_count());
  e = expect_error([&] { load_model(scratch_file("moe-hf/negative.json", base + ", \"shared_expert_intermediate_size\": -32}")); });
  CHECK(e.yaml_path() == "shared_expert_intermediate_size");
  e = expect_error([&] { load_model(scratch_file("moe-hf/topk.json", base + ", \"num_experts_per_tok\": 9}")); });
  CHECK(e.yaml_path() == "num_experts_per_tok");
  CHECK(std::string(e.what()).find("top_k 9 is above the 8 experts") != std::string::npos);
  const std::string deepseek =
      "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, "
      "\"num_hidden_layers\": 6, \"max_position_embeddings\": 32, \"vocab_size\": 100, \"n_routed_experts\": 8, "
      "\"kv_lora_rank\": 16, \"q_lora_rank\": 24}";
  e = expect_error([&] { load_model(scratch_file("moe-hf/deepseek.json", deepseek)); });
  CHECK(e.yaml_path() == "kv_lora_rank");
  CHECK(std::string(e.what()).find("multi-head latent attention") != std::string::npos);
  // Experts on a dense model type stay an error naming the field.
  e = expect_error([&] { load_model(scratch_file("moe-hf/llama-experts.json",
      "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, "
      "\"num_hidden_layers\": 2, \"max_position_embeddings\": 32, \"vocab_size\": 100, \"num_local_experts\": 8}")); });
  CHECK(e.yaml_path() == "num_local_experts");
}

TEST_CASE("set_sequence regenerates a family model's layers and refuses a listed one") {
  Model mixtral = load_model("configs/models/hf/mixtral-8x7b-config.json");
  const double flops_32k = mixtral.layers[1].forward_flops();
  set_sequence(mixtral, 4096, mixtral.training.precision, "--sequence");
  CHECK(mixtral.sequence == 4096);
  CHECK(mixtral.layers[1].all_to_all_bytes == 4096.0 * 4096 * 2 * 2);
  CHECK(mixtral.layers[1].forward_flops() < flops_32k / 8);
  Model listed;
  listed.name = "l";
  listed.family = "listed";
  const whale::Error e = expect_error([&] { set_sequence(listed, 128, Precision::fp32, "--sequence"); });
  CHECK(e.yaml_path() == "--sequence");
}

TEST_CASE("expert layouts: every valid (ep, expert_tp), and the planner's choice inside a node") {
  MoeSpec moe;
  moe.experts = 8;
  moe.top_k = 2;
  // 8 devices at tp 2: ep divides 8 and ep x expert_tp divides 8, expert_tp in {1, 2}.
  const std::vector<ExpertLayout> all = expert_layouts(moe, 8, 2);
  REQUIRE(all.size() == 7);
  CHECK((all.front().ep == 1 && all.front().expert_tp == 1));
  CHECK((all.back().ep == 8 && all.back().expert_tp == 1));
  Model model = load_model("configs/models/hf/mixtral-8x7b-config.json");
  const Cluster cluster = load_cluster("configs/clusters/a100-64.yaml");  // 8 nodes of 8
  std::vector<int> sixteen;
  for (int d = 0; d < 16; ++d) sixteen.push_back(d);
  // 16 devices over 2 nodes at tp 1: ep 8 fills a node; ep 16 is not a divisor of 8 experts.
  ExpertLayout chosen = choose_expert_layout(model, cluster, sixteen, 1);
  CHECK((chosen.ep == 8 && chosen.expert_tp == 1));
  // At tp 8 the experts fold apart from attention's tp: ep 8 x expert_tp 1 in each node beats
  // ep 2 x expert_tp 8, whose ep ranks 8 devices apart would sit on two nodes.
  chosen = choose_expert_layout(model, cluster, sixteen, 8);
  CHECK((chosen.ep == 8 && chosen.expert_tp == 1));
  CHECK(ExpertShardTable(model, 8)(8, 2) == 8);
  CHECK(ExpertShardTable(model, 8)(1, 4) == 4);
  model.moe.reset();
  CHECK(choose_expert_layout(model, cluster, sixteen, 2).ep == 1);
}

TEST_CASE("moe layouts: the shard table answers as expert_layouts' largest span inside a node") {
  // The reference: expert_layouts' pairs whose ep > 1 groups divide a node (or tp alone).
  auto reference = [](const Model& model, int tp, int dp, int node) {
    int best = tp;
    for (const ExpertLayout& l : expert_layouts(*model.moe, tp * dp, tp)) {
      const int span = l.ep * l.expert_tp;
      if (l.ep == 1 || (span <= node && node % span == 0)) best = std::max(best, span);
    }
    return best;
  };
  const Model mixtral = load_model("configs/models/hf/mixtral-8x7b-config.json");   // 8 experts
  const Model qwen = load_model("configs/models/hf/qwen3-235b-a22b-config.json");   // 128 experts
  // By hand: 12 devices at tp 4 on nodes of 8 take groups of 4 (4 divides 12 and 8), at dp 4
  // (16 devices) groups of 8; Mixtral at tp 2 on 6 devices in nodes of 6: ep 2 only (3 and 6
  // do not divide 8 experts), so tp's 2.
  CHECK(ExpertShardTable(qwen, 8)(4, 3) == 4);
  CHECK(ExpertShardTable(qwen, 8)(4, 4) == 8);
  CHECK(ExpertShardTable(qwen, 8)(1, 12) == 4);
  CHECK(ExpertShardTable(mixtral, 6)(2, 3) == 2);
  CHECK(ExpertShardTable(mixtral, 6)(1, 6) == 2);
  long compared = 0;
  for (const Model* model : {&mixtral, &qwen}) {
    for (int node = 1; node <= 10; ++node) {
      const ExpertShardTable table(*model, node);
      for (int tp : {1, 2, 3, 4, 6, 8, 16}) {
        for (int dp = 1; dp <= 24; ++dp) {
          const int expected = reference(*model, tp, dp, node);
          CHECK(table(tp, dp) == expected);
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 2 * 10 * 7 * 24);
  // A node past the table's size is computed per call, to the same answers.
  const ExpertShardTable wide(qwen, 192);
  for (int dp : {1, 3, 16, 48, 96}) CHECK(wide(2, dp) == reference(qwen, 2, dp, 192));
  CHECK(wide(2, 48) == 32);   // 96 devices: a span is a power of two (ep divides 128) dividing 96
  Model dense = mixtral;
  dense.moe.reset();
  CHECK(ExpertShardTable(dense, 8)(4, 3) == 4);
}

TEST_CASE("moe export: Megatron-Core's MoE arguments, and DeepSpeed's limit") {
  const Plan plan = load_plan("configs/validation/moe-folding-2025/mixtral-8x22b-128gpu.yaml");
  const std::string megatron = export_text(plan, Framework::megatron);
  for (const char* expected : {"--num-experts 8\n", "--moe-router-topk 2\n", "--moe-ffn-hidden-size 16384\n",
                               "--expert-model-parallel-size 8\n", "--expert-tensor-parallel-size 1\n",
                               "--moe-aux-loss-coeff 0.001\n", "--moe-token-dispatcher-type alltoall\n"}) {
    CAPTURE(expected);
    CHECK(megatron.find(expected) != std::string::npos);
  }
  CHECK(megatron.find("--moe-layer-freq") == std::string::npos);  // every block has experts
  CHECK(megatron.find("--moe-router-score-function") == std::string::npos);  // softmax_topk
  Plan sigmoid = plan;
  sigmoid.model.moe->router = MoeRouter::sigmoid_bias;
  sigmoid.model.moe->bias_update_rate = 0.002;
  const std::string deepseek = export_text(sigmoid, Framework::megatron);
  for (const char* expected : {"--moe-router-score-function sigmoid\n", "--moe-router-enable-expert-bias\n",
                               "--moe-router-bias-update-rate 0.002\n"}) {
    CAPTURE(expected);
    CHECK(deepseek.find(expected) != std::string::npos);
  }
  const whale::Error e = expect_error([&] { export_text(plan, Framework::deepspeed); });
  CHECK(std::string(e.what()).find("a mixture-of-experts model") != std::string::npos);
}

// File: test_export.cpp
// Plans exported to Megatron-LM arguments and DeepSpeed's ds_config.json: the a100-64 plans,
// field by field, and what each framework cannot express.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "test_specs_util.h"
#include "whale/plan/export.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// GPT-3 6.7B on a100-64: 4 stages of dp 2 x tp 8 with the given layer ranges and settings.
Plan a100_plan(const std::string& name, const std::vector<std::string>& ranges, const std::string& stage_extra) {
  std::string text = "cluster: " + source_path("configs/clusters/a100-64.yaml") + "\nmodel: " +
                     source_path("configs/models/gpt3-6.7b.yaml") +
                     "\nmicro_batch_size: 4\nmicro_batches: 256\nschedule: {kind: 1f1b}\nstages:\n";
  const char* devices[] = {"0-15", "16-31", "32-47", "48-63"};
  for (int s = 0; s < 4; ++s) {
    text += "  - {layers: " + ranges[s] + ", devices: \"" + devices[s] + "\", tp: 8" + stage_extra + "}\n";
  }
  return load_plan(scratch_file(name, text));
}

const std::vector<std::string> kHeader = {
    "# Megatron-LM arguments of a whale plan (mapping: docs/export.md).",
    "# Ranks in order (tp fastest, then dp, then pipeline) run on devices 0-63.",
    "# Vocabulary 51200: set by the tokenizer arguments.",
    "# Use: source FILE; torchrun ... pretrain_gpt.py \"${WHALE_MEGATRON_ARGS[@]}\" <data, learning rate>",
    "WHALE_MEGATRON_ARGS=("};
const std::vector<std::string> kGpt3Shape = {
    "  --num-layers 32", "  --hidden-size 4096", "  --ffn-hidden-size 16384", "  --num-attention-heads 32",
    "  --seq-length 2048", "  --max-position-embeddings 2048", "  --attention-dropout 0.1", "  --hidden-dropout 0.1",
    "  --untie-embeddings-and-output-weights", ")"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b,
                                const std::vector<std::string>& c) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

}  // namespace

TEST_CASE("the shipped a100-64 interleaved plan as Megatron-LM arguments") {
  // 4 groups of dp 2 x tp 8, 2 chunks of 4 blocks each; a micro-batch of 4 is 2 per dp rank.
  const Plan plan = load_plan("configs/plans/a100-64-gpt3-6.7b-interleaved.yaml");
  CHECK(export_limits(plan, Framework::megatron).empty());
  CHECK(lines(megatron_arguments(plan)) ==
        concat(kHeader,
               {"  --tensor-model-parallel-size 8", "  --pipeline-model-parallel-size 4",
                "  --num-layers-per-virtual-pipeline-stage 4", "  --micro-batch-size 2",
                "  --global-batch-size 1024", "  --bf16"},
               kGpt3Shape));
  // DeepSpeed's pipeline engine has no interleaving.
  const std::vector<std::string> limits = export_limits(plan, Framework::deepspeed);
  REQUIRE(limits.size() == 1);
  CHECK(limits[0] == "schedule interleaved-1f1b: DeepSpeed's pipeline engine runs its own 1f1b schedule");
  CHECK_THROWS_AS(deepspeed_config(plan), whale::Error);
}

TEST_CASE("an a100-64 1f1b plan with recomputation and ZeRO-1, in both frameworks") {
  const Plan plan = a100_plan("export-1f1b.yaml", {"[0, 8]", "[9, 16]", "[17, 24]", "[25, 33]"},
                              ", recompute: full, shard_optimizer: true");
  CHECK(lines(megatron_arguments(plan)) ==
        concat(kHeader,
               {"  --tensor-model-parallel-size 8", "  --pipeline-model-parallel-size 4", "  --micro-batch-size 2",
                "  --global-batch-size 1024", "  --bf16", "  --recompute-granularity full",
                "  --recompute-method uniform", "  --recompute-num-layers 1", "  --use-distributed-optimizer"},
               kGpt3Shape));
  CHECK(lines(deepspeed_config(plan)) ==
        std::vector<std::string>{
            "{", "  \"train_batch_size\": 1024,", "  \"train_micro_batch_size_per_gpu\": 2,",
            "  \"gradient_accumulation_steps\": 256,", "  \"bf16\": {\"enabled\": true},",
            "  \"zero_optimization\": {\"stage\": 1},", "  \"tensor_parallel\": {\"autotp_size\": 8},",
            "  \"activation_checkpointing\": {\"partition_activations\": false, "
            "\"contiguous_memory_optimization\": false, \"cpu_checkpointing\": false},",
            "  \"pipeline\": {\"stages\": 4, \"partition\": \"type:transformer\", \"activation_checkpoint_interval\": 1}",
            "}"});
}

TEST_CASE("gradients reduced in fp32: Megatron-LM's fp32 accumulation under fp16, DeepSpeed's communication dtype") {
  Plan plan = a100_plan("export-grad-fp32.yaml", {"[0, 8]", "[9, 16]", "[17, 24]", "[25, 33]"}, "");
  const auto has = [](const std::string& text, const std::string& line) {
    const std::vector<std::string> all = lines(text);
    return std::find(all.begin(), all.end(), line) != all.end();
  };
  CHECK_FALSE(has(deepspeed_config(plan), "  \"communication_data_type\": \"fp32\","));
  plan.framework_precision.grad_reduce = GradReducePrecision::fp32;
  CHECK(has(deepspeed_config(plan), "  \"communication_data_type\": \"fp32\","));
  CHECK_FALSE(has(megatron_arguments(plan), "  --accumulate-allreduce-grads-in-fp32"));  // bf16: implied
  plan.precision = Precision::fp16;
  CHECK(has(megatron_arguments(plan), "  --accumulate-allreduce-grads-in-fp32"));
}

TEST_CASE("bf16 on devices without bf16 units: fp16 with dynamic loss scaling, and a note that says so") {
  // GPT-3 6.7B (bf16) on the V100 node pair of v100-t4: one stage of dp 2 x tp 8.
  const Plan plan = load_plan(scratch_file("export-bf16-v100.yaml",
      "cluster: " + source_path("configs/clusters/v100-t4.yaml") + "\nmodel: " +
      source_path("configs/models/gpt3-6.7b.yaml") +
      "\nmicro_batch_size: 4\nmicro_batches: 256\nschedule: 1f1b\nstages:\n"
      "  - {layers: [0, 33], devices: \"0-15\", tp: 8, recompute: full}\n"));
  REQUIRE(plan.precision == Precision::bf16);
  const std::vector<std::string> ds = lines(deepspeed_config(plan));
  CHECK(std::find(ds.begin(), ds.end(), "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0},") != ds.end());
  CHECK(deepspeed_config(plan).find("bf16") == std::string::npos);
  const std::vector<std::string> mg = lines(megatron_arguments(plan));
  CHECK(std::find(mg.begin(), mg.end(), "  --fp16") != mg.end());
  CHECK(std::find(mg.begin(), mg.end(), "  --bf16") == mg.end());
  CHECK(std::find(mg.begin(), mg.end(),
                  "# Megatron-LM trains the bf16 plan as fp16 with dynamic loss scaling: v100-sxm2-16gb has no bf16 "
                  "units") != mg.end());
}

TEST_CASE("sequence parallelism and ZeRO-2: Megatron-LM's flags; DeepSpeed's ZeRO stage 2, no sequence parallelism") {
  const Plan plan = a100_plan("export-sp-zero2.yaml", {"[0, 8]", "[9, 16]", "[17, 24]", "[25, 33]"},
                              ", recompute: selective, shard_optimizer: true, shard_gradients: true, sequence_parallel: true");
  CHECK(lines(megatron_arguments(plan)) ==
        concat(kHeader,
               {"  --tensor-model-parallel-size 8", "  --pipeline-model-parallel-size 4", "  --micro-batch-size 2",
                "  --global-batch-size 1024", "  --bf16", "  --recompute-granularity selective",
                "  --use-distributed-optimizer", "  --sequence-parallel"},
               kGpt3Shape));
  CHECK(export_limits(plan, Framework::deepspeed) ==
        std::vector<std::string>{
            "sequence parallelism: DeepSpeed's config has no Megatron-style sequence parallelism "
            "(Megatron-DeepSpeed takes --sequence-parallel on its command line)",
            "selective recomputation: DeepSpeed checkpoints whole layers (activation_checkpoint_interval)"});
  // ZeRO-2 without the rest: DeepSpeed's stage 2.
  const Plan zero2 = a100_plan("export-zero2.yaml", {"[0, 8]", "[9, 16]", "[17, 24]", "[25, 33]"},
                               ", shard_optimizer: true, shard_gradients: true");
  CHECK(lines(deepspeed_config(zero2))[5] == "  \"zero_optimization\": {\"stage\": 2},");
}

TEST_CASE("uneven first and last stages: Megatron-LM's decoder-first/last, not DeepSpeed") {
  const Plan plan = a100_plan("export-uneven.yaml", {"[0, 9]", "[10, 17]", "[18, 25]", "[26, 33]"}, "");
  const std::vector<std::string> megatron = lines(megatron_arguments(plan));
  CHECK(megatron[7] == "  --decoder-first-pipeline-num-layers 9");
  CHECK(megatron[8] == "  --decoder-last-pipeline-num-layers 7");
  CHECK(export_limits(plan, Framework::deepspeed) ==
        std::vector<std::string>{"layers per stage 9,8,8,7: DeepSpeed's partition methods (uniform, parameters, "
                                 "type:) balance layers, they do not place boundaries"});
  // An uneven middle stage is beyond Megatron-LM too.
  const Plan middle = a100_plan("export-middle.yaml", {"[0, 8]", "[9, 17]", "[18, 24]", "[25, 33]"}, "");
  CHECK(export_limits(middle, Framework::megatron) ==
        std::vector<std::string>{"layers per stage 8,9,7,8: only the first and the last stage may differ from the others"});
}

TEST_CASE("uneven shares and per-stage settings are named, and exporting them fails") {
  const std::string path = scratch_file("export-shares.yaml",
      "cluster: " + source_path("configs/clusters/a100-v100.yaml") + "\nmodel: " +
      source_path("configs/models/gpt3-1.3b.yaml") +
      "\nmicro_batch_size: 4\nmicro_batches: 128\nschedule: {kind: 1f1b}\nstages:\n"
      "  - {layers: [0, 12], devices: \"0-1\", shares: [3, 1]}\n"
      "  - {layers: [13, 25], devices: \"16-19\", tp: 2, recompute: full}\n");
  const Plan plan = load_plan(path);
  const std::vector<std::string> expected = {
      "stage 0 has uneven shares 3,1: every data-parallel rank takes the same micro-batch",
      "stage 1 has dp 2 x tp 2, stage 0 dp 2 x tp 1: per-stage degrees must be equal",
      "stage 1 recomputes full, stage 0 none: one recomputation setting for all stages"};
  CHECK(export_limits(plan, Framework::megatron) == expected);
  CHECK(export_limits(plan, Framework::deepspeed) == expected);
  CHECK_SPEC_ERROR([&] { megatron_arguments(plan); }, path, "--export-megatron",
                   "a plan Megatron-LM can express, but stage 0 has uneven shares 3,1");
}

TEST_CASE("a llama plan carries its shape into Megatron-LM's arguments") {
  const std::string path = scratch_file("export-llama.yaml",
      "cluster: " + source_path("configs/clusters/a100-64.yaml") + "\nmodel: " +
      source_path("configs/models/hf/llama3-8b-config.json") +
      "\nmicro_batch_size: 1\nmicro_batches: 512\nschedule: {kind: 1f1b}\nstages:\n  - {layers: [0, 33], devices: \"0-7\", tp: 8, recompute: selective}\n");
  const std::vector<std::string> megatron = lines(megatron_arguments(load_plan(path)));
  const std::vector<std::string> tail(megatron.begin() + 11, megatron.end());
  CHECK(tail == std::vector<std::string>{
                    "  --num-layers 32", "  --hidden-size 4096", "  --ffn-hidden-size 14336",
                    "  --num-attention-heads 32", "  --seq-length 8192", "  --max-position-embeddings 8192",
                    "  --attention-dropout 0", "  --hidden-dropout 0", "  --swiglu", "  --normalization RMSNorm", "  --disable-bias-linear", "  --group-query-attention",
                    "  --num-query-groups 8", "  --position-embedding-type rope", "  --rotary-base 500000",
                    "  --untie-embeddings-and-output-weights", ")"});
  CHECK(megatron[10] == "  --recompute-granularity selective");
  CHECK(export_limits(load_plan(path), Framework::deepspeed) ==
        std::vector<std::string>{"selective recomputation: DeepSpeed checkpoints whole layers (activation_checkpoint_interval)"});
}

TEST_CASE("zb-h1 is a limit of both frameworks: neither splits the backward") {
  Plan plan = a100_plan("export-zb-h1.yaml", {"[0, 8]", "[9, 16]", "[17, 24]", "[25, 33]"}, "");
  plan.schedule.kind = ScheduleKind::zb_h1;
  CHECK(export_limits(plan, Framework::megatron) ==
        std::vector<std::string>{"schedule zb-h1: Megatron-LM runs 1f1b or interleaved-1f1b; its backward is "
                                 "not split into input and weight gradient passes"});
  CHECK(export_limits(plan, Framework::deepspeed) ==
        std::vector<std::string>{"schedule zb-h1: DeepSpeed's pipeline engine runs its own 1f1b schedule"});
  CHECK_THROWS_AS(megatron_arguments(plan), whale::Error);
  CHECK_THROWS_AS(deepspeed_config(plan), whale::Error);
}

TEST_CASE("Megatron-LM runs the model's dropouts and optimizer, which the plan's memory counts") {
  Plan plan = a100_plan("export-sgd.yaml", {"[0, 8]", "[9, 16]", "[17, 24]", "[25, 33]"}, "");
  plan.model.attention_dropout = 0.05;
  plan.model.hidden_dropout = 0.0;
  plan.model.training.optimizer = "sgd";
  const std::vector<std::string> megatron = lines(megatron_arguments(plan));
  const auto at = std::find(megatron.begin(), megatron.end(), "  --max-position-embeddings 2048");
  REQUIRE(at != megatron.end());
  CHECK(std::vector<std::string>(at + 1, at + 4) ==
        std::vector<std::string>{"  --attention-dropout 0.05", "  --hidden-dropout 0", "  --optimizer sgd"});
  plan.model.training.optimizer = "adamw";  // Megatron-LM's default adam is AdamW: no argument
  const std::vector<std::string> adamw = lines(megatron_arguments(plan));
  CHECK(std::find(adamw.begin(), adamw.end(), "  --optimizer sgd") == adamw.end());
}

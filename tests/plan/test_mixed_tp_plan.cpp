// File: test_mixed_tp_plan.cpp
// Plans whose stage replicas run at different tp degrees (replica_tp): the replica queries,
// the save/load round trip and every rule validate_plan checks, each with its YAML path.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

namespace {

// A plan of the tiny GPT (10 layers, 4 heads) on 8 CPU ranks with `stages` (YAML list text),
// micro_batch_size 4 and `model` (a path) when given.
std::string mixed_plan(const std::string& stages, const std::string& model = "") {
  return scratch_file("mixed-tp/plan.yaml",
                      "cluster: " + source_path("configs/clusters/cpu-local-8.yaml") + "\n"
                      "model: " + (model.empty() ? source_path("configs/models/tiny.yaml") : model) + "\n"
                      "micro_batch_size: 4\nmicro_batches: 2\nschedule: 1f1b\nstages:\n" + stages);
}

}  // namespace

TEST_CASE("a stage with replicas at tp 1 and 2 walks its replicas by their own degrees") {
  const Plan plan = load_plan(mixed_plan("  - {layers: [0, 4], devices: \"0-2\", replica_tp: [1, 2]}\n"
                                         "  - {layers: [5, 9], devices: \"3-6\", replica_tp: [2, 1, 1], shares: [2, 1, 1]}\n"));
  const Stage& first = plan.stages[0];
  CHECK(first.mixed_tp());
  CHECK(first.replicas() == 2);
  CHECK(first.dp() == 2);
  CHECK(first.tp == 2);  // the finest shard
  CHECK(first.replica_tp(0) == 1);
  CHECK(first.replica_tp(1) == 2);
  CHECK(first.replica_offset(1) == 1);
  CHECK(first.replica_devices(0) == std::vector<int>{0});
  CHECK(first.replica_devices(1) == std::vector<int>{1, 2});
  CHECK(first.shares == std::vector<int>{2, 2});  // the default: micro_batch_size / replicas
  CHECK(first.as_replica(0).tp == 1);
  CHECK(first.as_replica(1).tp == 2);
  const Stage& second = plan.stages[1];
  CHECK(second.replicas() == 3);
  CHECK(second.replica_devices(0) == std::vector<int>{3, 4});
  CHECK(second.replica_devices(2) == std::vector<int>{6});
  CHECK(second.first_sample(2) == 3);
}

TEST_CASE("a uniform stage answers the replica queries as before") {
  const Plan plan = load_plan(mixed_plan("  - {layers: [0, 9], devices: \"0-3\", tp: 2}\n"));
  const Stage& stage = plan.stages[0];
  CHECK_FALSE(stage.mixed_tp());
  CHECK(stage.replicas() == 2);
  CHECK(stage.replica_tp(1) == 2);
  CHECK(stage.replica_offset(1) == 2);
  CHECK(stage.replica_devices(1) == std::vector<int>{2, 3});
}

TEST_CASE("replica_tp survives a save and a load") {
  const Plan plan = load_plan(mixed_plan("  - {layers: [0, 9], devices: \"0-4\", replica_tp: [1, 4], shares: [1, 3]}\n"));
  const std::string text = plan_to_yaml(plan, false);
  CHECK(text.find("replica_tp: [1, 4]") != std::string::npos);
  CHECK(text.find("tp: 4") == std::string::npos);
  const std::string path = scratch_file("mixed-tp/saved.yaml", "");
  save_plan(plan, path, true);
  const Plan again = load_plan(path);
  CHECK(again.stages[0].replica_tps == std::vector<int>{1, 4});
  CHECK(again.stages[0].tp == 4);
  CHECK(again.stages[0].shares == std::vector<int>{1, 3});
  CHECK(plan_to_yaml(again, true) == plan_to_yaml(plan, true));
}

TEST_CASE("replica_tp errors name the field") {
  std::string p = mixed_plan("  - {layers: [0, 9], devices: \"0-3\", replica_tp: [1, 2]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp", "replica_tp sums to 3, not the stage's 4 devices");
  p = mixed_plan("  - {layers: [0, 9], devices: \"0-3\", tp: 2, replica_tp: [2, 2]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp", "give either tp (every replica) or replica_tp (one per replica), not both");
  p = mixed_plan("  - {layers: [0, 9], devices: \"0-3\", replica_tp: [1, 3]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp[1]", "tp 3 does not divide the model's 4 heads");
  p = mixed_plan("  - {layers: [0, 9], devices: \"0-3\", replica_tp: [1, 0, 3]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp[1]", "positive integer");
  p = mixed_plan("  - {layers: [0, 9], devices: \"0-3\", replica_tp: []}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp", "expected one tp degree per replica");
  p = mixed_plan("  - {layers: [0, 9], devices: \"0-2\", replica_tp: [1, 2], shares: [4]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].shares", "expected 2 shares (one per replica), got 1");
}

TEST_CASE("replicas at tp 2 and 3 do not nest") {
  const std::string model = scratch_file("mixed-tp/six-heads.yaml",
                                         "name: six-heads\nfamily: gpt\nlayers: 2\nhidden: 96\nheads: 6\nffn_hidden: 384\n"
                                         "sequence: 32\nvocabulary: 256\ntraining: {global_batch: 8, precision: fp32, optimizer: adamw}\n");
  const std::string p = mixed_plan("  - {layers: [0, 3], devices: \"0-4\", replica_tp: [3, 2]}\n", model);
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp[1]", "tp 2 does not divide the largest replica tp 3");
}

TEST_CASE("strategies that need one tp per stage are refused on a mixed stage") {
  std::string p = mixed_plan("  - {layers: [0, 9], devices: \"0-2\", replica_tp: [1, 2], sequence_parallel: true}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].sequence_parallel", "sequence parallelism needs one tp for every replica");
  p = mixed_plan("  - {layers: [0, 9], devices: \"0-2\", replica_tp: [1, 2], shard_optimizer: true}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].shard_optimizer", "a sharded optimizer (ZeRO) needs one tp for every replica");
  const std::string moe = scratch_file("mixed-tp/moe.yaml",
                                       "name: tiny-moe\nfamily: gpt\nlayers: 2\nhidden: 64\nheads: 4\nffn_hidden: 256\n"
                                       "sequence: 32\nvocabulary: 256\ntraining: {global_batch: 8, precision: fp32, optimizer: adamw}\n"
                                       "moe: {experts: 4, top_k: 2, router: softmax_topk}\n");
  p = mixed_plan("  - {layers: [0, 3], devices: \"0-2\", replica_tp: [1, 2]}\n", moe);
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].replica_tp", "replica_tp needs a dense model");
}

TEST_CASE("stages on one device group share their replica degrees") {
  const std::string stages =
      "  - {layers: [0, 2], devices: \"0-2\", replica_tp: [1, 2]}\n"
      "  - {layers: [3, 4], devices: \"3-5\", replica_tp: [1, 2]}\n"
      "  - {layers: [5, 7], devices: \"0-2\", replica_tp: [2, 1]}\n"
      "  - {layers: [8, 9], devices: \"3-5\", replica_tp: [1, 2]}\n";
  const std::string p = scratch_file("mixed-tp/interleaved.yaml",
                                     "cluster: " + source_path("configs/clusters/cpu-local-8.yaml") + "\n"
                                     "model: " + source_path("configs/models/tiny.yaml") + "\n"
                                     "micro_batch_size: 4\nmicro_batches: 2\nschedule: {kind: interleaved-1f1b, chunks: 2}\nstages:\n" + stages);
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[2].replica_tp", "the replicas' tp degrees differ from those of stage 0");
}

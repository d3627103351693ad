// File: test_search_mixed_tp.cpp
// mixed_tp_variants: the per-model tp degrees the search tries on a group that mixes device
// models, its replicas re-cut model by model and the micro-batch split by replica peak.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_mixed_tp.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

namespace {

// GPT-3 1.3B (16 heads) in fp16 on one stage of `devices` of the A100 + V100 cluster (devices
// 0-15 A100-SXM4-40GB on two nodes, 16-63 V100-SXM2-16GB), micro-batches of 32.
Plan one_stage(const std::string& devices, const std::string& layout) {
  return load_plan(scratch_file("mixed-tp/search.yaml",
                                "cluster: " + source_path("configs/clusters/a100-v100.yaml") + "\n"
                                "model: " + source_path("configs/models/gpt3-1.3b.yaml") + "\n"
                                "precision: fp16\nmicro_batch_size: 32\nmicro_batches: 24\nschedule: 1f1b\n"
                                "stages:\n  - {layers: [0, 25], devices: \"" + devices + "\", " + layout + "}\n"));
}

}  // namespace

TEST_CASE("a group of A100s and V100s gets every pair of differing degrees") {
  const Plan plan = one_stage("0-7,16-23", "tp: 4, shares: [11, 11, 5, 5], shard_optimizer: true");
  const std::vector<Plan> variants = mixed_tp_variants(plan, 100);
  // Degrees 1, 2, 4, 8 for each model (8 devices of each in one node), less the four uniform.
  REQUIRE(variants.size() == 12);
  for (const Plan& v : variants) validate_plan(v);
  // The second: A100s at tp 1, V100s at tp 4. Replica peaks 312 and 4 x 125 = 500 TFLOP/s:
  // 22 spare samples give an A100 replica 22 x 312 / 3496 = 1.96 and a V100 replica 3.15; the
  // floors (1 and 3) leave 8, which go to the eight A100 remainders (0.96 > 0.15).
  const Stage& stage = variants[1].stages[0];
  CHECK(stage.replica_tps == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1, 4, 4});
  CHECK(stage.shares == std::vector<int>{3, 3, 3, 3, 3, 3, 3, 3, 4, 4});
  CHECK(stage.devices == plan.stages[0].devices);
  CHECK(stage.tp == 4);
  CHECK_FALSE(stage.shard_optimizer);  // sharding needs one tp for every replica
  CHECK(variants[0].stages[0].replica_tps == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2});
  CHECK(variants[3].stages[0].replica_tps == std::vector<int>{2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(mixed_tp_variants(plan, 5).size() == 5);
}

TEST_CASE("the devices are re-cut model by model, and a replica stays inside one node") {
  // Striped: A100 0-3 (node 0), V100 16-19 (node 2), A100 8-11 (node 1). The A100s (8 devices
  // on two nodes) take tp 1, 2 or 4 but not 8, the V100s tp 1, 2 or 4.
  const Plan plan = one_stage("0-3,16-19,8-11", "tp: 4, shares: [12, 8, 12]");
  const std::vector<Plan> variants = mixed_tp_variants(plan, 100);
  REQUIRE(variants.size() == 6);  // 3 x 3, less the three uniform
  const Stage& stage = variants.front().stages[0];  // A100 tp 1, V100 tp 2
  CHECK(stage.devices == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19});
  CHECK(stage.replica_tps == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1, 2, 2});
}

TEST_CASE("a group of one device model, or too few samples for the replicas, gets none") {
  CHECK(mixed_tp_variants(one_stage("0-15", "tp: 4, shares: [8, 8, 8, 8]"), 100).empty());
  // 8 A100 + 8 V100 devices: every variant with a tp-1 model has at least 9 replicas, more than
  // a micro-batch of 8 samples (the variants left have 8 replicas or fewer).
  Plan small = one_stage("0-7,16-23", "tp: 8, shares: [16, 16]");
  small.micro_batch_size = 8;
  small.stages[0].shares = {4, 4};
  for (const Plan& v : mixed_tp_variants(small, 100)) CHECK(v.stages[0].replicas() <= 8);
}

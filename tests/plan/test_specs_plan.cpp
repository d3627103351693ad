// File: test_specs_plan.cpp
// Plans: device lists, the stage placement rule, loading with defaults, precision overrides and
// the save/load round trips (referenced and embedded).
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "test_specs_util.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

using whale::plan::testing::read_text;
TEST_CASE("device lists parse and format") {
  CHECK(parse_device_list("0-3,7, 9-10", "f", "p") == std::vector<int>{0, 1, 2, 3, 7, 9, 10});
  CHECK(parse_device_list("5", "f", "p") == std::vector<int>{5});
  CHECK(parse_device_list("3,2", "f", "p") == std::vector<int>{3, 2});
  CHECK(format_device_list({0, 1, 2, 3, 7, 9, 10}) == "0-3,7,9-10");
  CHECK(format_device_list({5}) == "5");
  CHECK(format_device_list({3, 2}) == "3,2");
  CHECK(format_device_list({}) == "");
  CHECK_SPEC_ERROR([] { parse_device_list("3-1", "plan.yaml", "stages[0].devices"); }, "plan.yaml",
                   "stages[0].devices", "range '3-1' goes backwards");
  CHECK_SPEC_ERROR([] { parse_device_list("1,,2", "plan.yaml", "stages[1].devices"); }, "plan.yaml",
                   "stages[1].devices", "'' is not an id or a range");
  CHECK_SPEC_ERROR([] { parse_device_list("gpu0", "f", "p"); }, "f", "p", "'gpu0' is not an id");
  CHECK_SPEC_ERROR([] { parse_device_list("-1", "f", "p"); }, "f", "p", "not an id or a range");
}

TEST_CASE("stage placement follows the schedule") {
  CHECK(group_of_stage(ScheduleKind::one_f_one_b, 4, 1, 3) == 3);
  CHECK(group_of_stage(ScheduleKind::gpipe, 2, 1, 1) == 1);
  std::vector<int> interleaved, wave;
  for (int s = 0; s < 6; ++s) {
    interleaved.push_back(group_of_stage(ScheduleKind::interleaved_1f1b, 3, 2, s));
    wave.push_back(group_of_stage(ScheduleKind::wave, 3, 2, s));
  }
  CHECK(interleaved == std::vector<int>{0, 1, 2, 0, 1, 2});
  CHECK(wave == std::vector<int>{0, 1, 2, 2, 1, 0});
  CHECK(group_of_stage(ScheduleKind::wave, 2, 3, 4) == 0);  // chunk 2 goes down again
  CHECK(group_of_stage(ScheduleKind::wave, 2, 3, 5) == 1);
}

TEST_CASE("names of schedules and recomputation") {
  ScheduleKind kind;
  CHECK(parse_schedule_kind("interleaved-1f1b", &kind));
  CHECK(kind == ScheduleKind::interleaved_1f1b);
  CHECK(std::string(to_string(ScheduleKind::one_f_one_b)) == "1f1b");
  CHECK_FALSE(parse_schedule_kind("pipedream", &kind));
  Recompute r;
  CHECK(parse_recompute("selective", &r));
  CHECK(r == Recompute::selective);
  CHECK(std::string(to_string(Recompute::full)) == "full");
  CHECK_FALSE(parse_recompute("some", &r));
}

TEST_CASE("a hand-written plan loads with its defaults") {
  const std::string path = scratch_file("plans/hand.yaml",
      "cluster: " + source_path("configs/clusters/cpu-local-4.yaml") + "\n"
      "model: " + source_path("configs/models/tiny.yaml") + "\n"
      "micro_batch_size: 4\nmicro_batches: 2\nschedule: 1f1b\n"
      "stages:\n"
      "  - {layers: [0, 4], devices: \"0-1\"}\n"
      "  - {layers: [5, 9], devices: [3, 2], tp: 2, recompute: full, shard_optimizer: true}\n");
  const Plan plan = load_plan(path);
  CHECK(plan.source_file == path);
  CHECK(plan.precision == Precision::fp32);  // the model's
  CHECK(plan.schedule.kind == ScheduleKind::one_f_one_b);
  CHECK(plan.schedule.chunks == 1);
  CHECK(plan.global_batch() == 8);
  CHECK(plan.pipeline_groups() == 2);
  REQUIRE(plan.stages.size() == 2);
  const Stage& first = plan.stages[0];
  CHECK(first.first_layer == 0);
  CHECK(first.end_layer == 5);
  CHECK(first.tp == 1);
  CHECK(first.dp() == 2);
  CHECK(first.shares == std::vector<int>{2, 2});
  CHECK(first.recompute == Recompute::none);
  CHECK_FALSE(first.shard_optimizer);
  CHECK(first.first_sample(1) == 2);
  const Stage& second = plan.stages[1];
  CHECK(second.devices == std::vector<int>{3, 2});
  CHECK(second.dp() == 1);
  CHECK(second.shares == std::vector<int>{4});
  CHECK(second.replica_devices(0) == std::vector<int>{3, 2});
  CHECK(second.recompute == Recompute::full);
  CHECK(second.shard_optimizer);
  CHECK(plan.group_of_stage(1) == 1);
}

TEST_CASE("uneven shares and replica devices") {
  Stage stage;
  stage.devices = {4, 5, 6, 7, 0, 1};
  stage.tp = 2;
  stage.shares = {3, 2, 1};
  CHECK(stage.dp() == 3);
  CHECK(stage.replica_devices(1) == std::vector<int>{6, 7});
  CHECK(stage.replica_devices(2) == std::vector<int>{0, 1});
  CHECK(stage.first_sample(0) == 0);
  CHECK(stage.first_sample(2) == 5);
}

TEST_CASE("a plan precision other than the model's regenerates its layers") {
  const std::string path = scratch_file("plans/bf16.yaml",
      "cluster: " + source_path("configs/clusters/a100-64.yaml") + "\n"
      "model: " + source_path("configs/models/tiny.yaml") + "\n"
      "precision: bf16\nmicro_batch_size: 2\nmicro_batches: 4\nschedule: {kind: gpipe}\n"
      "stages:\n  - {layers: [0, 9], devices: \"0-1\"}\n");
  const Plan plan = load_plan(path);
  CHECK(plan.precision == Precision::bf16);
  CHECK(plan.model.training.precision == Precision::fp32);
  CHECK(plan.model.layers[1].output_bytes == 32 * 64 * 2);
}

TEST_CASE("profiles_dir is read relative to the plan") {
  const std::string dir = std::string(WHALE_BINARY_DIR) + "/specs-scratch/plans";
  scratch_file("plans/my-profiles/cpu.yaml", read_text(source_path("profiles/cpu.yaml")));
  const std::string path = scratch_file("plans/own-profiles.yaml",
      "cluster: {name: one, network: {kind: shm, bandwidth_gbps: 1, latency_us: 1},\n"
      "          nodes: [{name: n, devices: [{model: cpu, count: 1}], intra_link: {kind: shm, bandwidth_gbps: 1, latency_us: 1}}]}\n"
      "model: " + source_path("configs/models/tiny.yaml") + "\n"
      "profiles_dir: my-profiles\nmicro_batch_size: 1\nmicro_batches: 1\nschedule: 1f1b\n"
      "stages:\n  - {layers: [0, 9], devices: \"0\"}\n");
  CHECK(load_plan(path).cluster.profile_of(0).name == "cpu");
  scratch_file("plans/empty-profiles/readme.txt", "no profiles here\n");
  const whale::Error e = whale::plan::testing::expect_error([&] { load_plan(path, dir + "/empty-profiles"); });
  CHECK(e.yaml_path() == "cluster.nodes[0].devices[0].model");
  CHECK(e.hint() == "available profiles: none");
}

TEST_CASE("a plan survives save and load, embedded or by reference") {
  for (const char* shipped : {"configs/plans/a100-v100-gpt3-1.3b.yaml", "configs/plans/a100-64-gpt3-13b-wave.yaml",
                              "configs/plans/mixed-node-gpt2-124m.yaml"}) {
    CAPTURE(shipped);
    const Plan plan = load_plan(shipped);
    const std::string embedded = std::string(WHALE_BINARY_DIR) + "/specs-scratch/embedded.yaml";
    save_plan(plan, embedded, true);
    const Plan back = load_plan(embedded);
    CHECK(back.cluster_file == "");
    CHECK(back.cluster.devices.size() == plan.cluster.devices.size());
    CHECK(back.model.parameter_count() == plan.model.parameter_count());
    CHECK(plan_to_yaml(back, true) == plan_to_yaml(plan, true));
    CHECK(read_text(embedded) == plan_to_yaml(plan, true));
    // By reference from another folder: the paths are rewritten to still find the files.
    const std::string referenced = scratch_file("elsewhere/deeper/referenced.yaml", "");
    save_plan(plan, referenced, false);
    const Plan again = load_plan(referenced);
    CHECK(again.cluster_file != "");
    CHECK(plan_to_yaml(again, true) == plan_to_yaml(plan, true));
    CHECK(again.stages.size() == plan.stages.size());
    CHECK(again.stages.back().shares == plan.stages.back().shares);
    CHECK(again.stages.back().recompute == plan.stages.back().recompute);
  }
}

TEST_CASE("plan_to_yaml writes every stage field") {
  const Plan plan = load_plan("configs/plans/a100-v100-gpt3-1.3b.yaml");
  const std::string text = plan_to_yaml(plan, false);
  CHECK(text.find("cluster: ../clusters/a100-v100.yaml") != std::string::npos);
  CHECK(text.find("schedule: {kind: 1f1b, chunks: 1}") != std::string::npos);
  CHECK(text.find("devices: 48-63") != std::string::npos);
  CHECK(text.find("shard_optimizer: true") != std::string::npos);
  CHECK(text.find("recompute: selective") != std::string::npos);
  CHECK(text == plan_to_yaml(load_plan("configs/plans/a100-v100-gpt3-1.3b.yaml"), false));
}

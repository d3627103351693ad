// File: test_specs_plan_errors.cpp
// Every way a plan can be wrong: each error names the plan file, the YAML path and the problem.
// The plans run the tiny GPT (10 layers, 4 heads) on 4 local CPU ranks.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

namespace {

// A plan file with `schedule` and `stages` (YAML text of the list) and micro_batch_size 4.
std::string plan_file(const std::string& stages, const std::string& schedule = "1f1b",
                      const std::string& extra = "micro_batch_size: 4\n") {
  return scratch_file("bad-plans/plan.yaml",
                      "cluster: " + source_path("configs/clusters/cpu-local-4.yaml") + "\n"
                      "model: " + source_path("configs/models/tiny.yaml") + "\n" + extra +
                      "micro_batches: 2\nschedule: " + schedule + "\nstages:\n" + stages);
}

}  // namespace

TEST_CASE("overlapping layer ranges") {
  const std::string p = plan_file("  - {layers: [0, 5], devices: \"0\"}\n  - {layers: [5, 9], devices: \"1\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[1].layers", "layers [5, 9] overlap the previous stage, which ends at layer 5");
}

TEST_CASE("layer ranges that leave a gap") {
  std::string p = plan_file("  - {layers: [0, 3], devices: \"0\"}\n  - {layers: [5, 9], devices: \"1\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[1].layers", "layers 4..4 are in no stage");
  p = plan_file("  - {layers: [0, 3], devices: \"0\"}\n  - {layers: [4, 8], devices: \"1\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[1].layers", "layers 9..9 are in no stage (a gap at the end)");
  p = plan_file("  - {layers: [1, 9], devices: \"0\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].layers", "layers 0..0 are in no stage");
  p = plan_file("  - {layers: [0, 10], devices: \"0\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].layers", "go past the model's last layer 9");
  p = plan_file("  - {layers: [4, 2], devices: \"0\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].layers", "expected first <= last");
  p = plan_file("  - {layers: [0, 4, 9], devices: \"0\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].layers", "expected [first, last]");
}

TEST_CASE("a device used twice") {
  std::string p = plan_file("  - {layers: [0, 4], devices: \"0-1\"}\n  - {layers: [5, 9], devices: \"1-2\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[1].devices", "device 1 is used twice: by stage 0 (group 0) and by stage 1 (group 1)");
  p = plan_file("  - {layers: [0, 9], devices: \"0,1,0,2\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].devices", "device 0 is used twice in this stage");
}

TEST_CASE("a device that is not in the cluster") {
  const std::string p = plan_file("  - {layers: [0, 4], devices: \"0-1\"}\n  - {layers: [5, 9], devices: \"3-4\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[1].devices", "device 4 is not in the cluster");
  const whale::Error e = whale::plan::testing::expect_error([&] { load_plan(p); });
  CHECK(e.hint() == "it has 4 devices, ids 0-3");
}

TEST_CASE("a tp that does not divide the heads or the group") {
  std::string p = plan_file("  - {layers: [0, 9], devices: \"0-2\", tp: 3}\n", "1f1b", "micro_batch_size: 3\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].tp", "tp 3 does not divide the model's 4 heads");
  p = plan_file("  - {layers: [0, 9], devices: \"0-2\", tp: 2, shares: [4]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].tp", "tp 2 does not divide the group size 3");
  p = plan_file("  - {layers: [0, 9], devices: \"0-1\", tp: 0}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].tp", "expected a positive integer, got '0'");
}

TEST_CASE("shares that do not sum to the micro-batch") {
  std::string p = plan_file("  - {layers: [0, 9], devices: \"0-1\", shares: [3, 2]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].shares", "shares sum to 5, not micro_batch_size 4");
  p = plan_file("  - {layers: [0, 9], devices: \"0-2\", shares: [2, 2]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].shares", "expected 3 shares (one per replica), got 2");
  p = plan_file("  - {layers: [0, 9], devices: \"0-1\", shares: [4, 0]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].shares[1]", "expected a positive integer, got '0'");
  p = plan_file("  - {layers: [0, 9], devices: \"0-2\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].shares", "micro_batch_size 4 does not split evenly over 3 replicas");
}

TEST_CASE("zero or negative plan sizes") {
  std::string p = plan_file("  - {layers: [0, 9], devices: \"0\"}\n", "1f1b", "micro_batch_size: 0\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "micro_batch_size", "expected a positive integer, got '0'");
  p = plan_file("  - {layers: [0, 9], devices: \"0\"}\n", "{kind: wave, chunks: -1}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "schedule.chunks", "expected a positive integer, got '-1'");
  // validate_plan checks plans built in code too.
  Plan plan = load_plan(plan_file("  - {layers: [0, 9], devices: \"0\"}\n"));
  plan.micro_batches = 0;
  CHECK_SPEC_ERROR([&] { validate_plan(plan); }, plan.source_file, "micro_batches", "expected a positive number of micro_batches");
}

TEST_CASE("an unknown schedule or recompute mode") {
  std::string p = plan_file("  - {layers: [0, 9], devices: \"0\"}\n", "pipedream");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "schedule", "unknown schedule 'pipedream'");
  p = plan_file("  - {layers: [0, 9], devices: \"0\"}\n", "{kind: zigzag}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "schedule.kind", "unknown schedule 'zigzag'");
  p = plan_file("  - {layers: [0, 9], devices: \"0\", recompute: half}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].recompute", "unknown recompute 'half'");
}

TEST_CASE("a stage count that is not a multiple of chunks") {
  std::string p = plan_file("  - {layers: [0, 3], devices: \"0\"}\n  - {layers: [4, 6], devices: \"1\"}\n"
                            "  - {layers: [7, 9], devices: \"0\"}\n", "{kind: interleaved-1f1b, chunks: 2}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages", "3 stages are not a multiple of schedule.chunks 2");
  p = plan_file("  - {layers: [0, 4], devices: \"0\"}\n  - {layers: [5, 9], devices: \"0\"}\n", "{kind: 1f1b, chunks: 2}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "schedule.chunks", "schedule 1f1b runs one chunk per device group");
}

TEST_CASE("a placement inconsistent with the schedule") {
  // interleaved: stage 2 runs on group 0 with stage 0, so it needs devices 0-1.
  std::string p = plan_file("  - {layers: [0, 2], devices: \"0-1\"}\n  - {layers: [3, 5], devices: \"2-3\"}\n"
                            "  - {layers: [6, 7], devices: \"2-3\"}\n  - {layers: [8, 9], devices: \"0-1\"}\n",
                            "{kind: interleaved-1f1b, chunks: 2}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[2].devices",
                   "schedule interleaved-1f1b places stage 2 on device group 0 with stage 0, but their devices differ");
  // The same stages are right for wave (chunk 1 comes back up: groups 1, 0).
  CHECK(load_plan(plan_file("  - {layers: [0, 2], devices: \"0-1\"}\n  - {layers: [3, 5], devices: \"2-3\"}\n"
                            "  - {layers: [6, 7], devices: \"2-3\"}\n  - {layers: [8, 9], devices: \"0-1\"}\n",
                            "{kind: wave, chunks: 2}")).pipeline_groups() == 2);
}

TEST_CASE("a precision a device does not have") {
  // cpu-measured's profile is whale-profile's measurement of fp32 alone; bf16 would run as fp32
  // (docs/profile.md#fallbacks), fp16 has no fallback.
  const std::string p = scratch_file("bad-plans/plan-fp16.yaml",
                                     "cluster: " + source_path("configs/clusters/cpu-measured.yaml") + "\n"
                                     "model: " + source_path("configs/models/tiny.yaml") + "\n"
                                     "precision: fp16\nmicro_batch_size: 4\nmicro_batches: 2\nschedule: 1f1b\n"
                                     "stages:\n  - {layers: [0, 9], devices: \"0\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "precision", "precision fp16 is unknown to device model 'cpu-measured'");
}

TEST_CASE("bad references and fields of a plan") {
  std::string p = scratch_file("bad-plans/missing-cluster.yaml",
                               "cluster: nowhere.yaml\nmodel: x.yaml\nmicro_batch_size: 1\nmicro_batches: 1\nschedule: 1f1b\nstages: []\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "cluster", "not found");
  p = plan_file("  - {layers: [0, 9], device: \"0\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].device", "unknown key 'device'");
  p = plan_file("  - {layers: [0, 9]}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].devices", "missing field 'devices'");
  p = plan_file("  - {layers: [0, 9], devices: \"0-\"}\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[0].devices", "bad device list '0-'");
  p = plan_file("");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages", "expected a list, got nothing");
}

TEST_CASE("stages on one device group with different layouts") {
  // wave: stages 1 and 2 both run on group 1 (devices 2-3); their tp and shares must agree.
  std::string p = plan_file("  - {layers: [0, 2], devices: \"0-1\"}\n  - {layers: [3, 5], devices: \"2-3\", tp: 2}\n"
                            "  - {layers: [6, 7], devices: \"2-3\"}\n  - {layers: [8, 9], devices: \"0-1\"}\n",
                            "{kind: wave, chunks: 2}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[2].tp",
                   "tp 1 differs from tp 2 of stage 1, which runs on the same device group");
  p = plan_file("  - {layers: [0, 2], devices: \"0-1\"}\n  - {layers: [3, 5], devices: \"2-3\", shares: [3, 1]}\n"
                "  - {layers: [6, 7], devices: \"2-3\"}\n  - {layers: [8, 9], devices: \"0-1\"}\n",
                "{kind: wave, chunks: 2}");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "stages[2].shares", "shares differ from those of stage 1");
}

TEST_CASE("a gradient bucket size that is not a positive number of MiB up to the limit") {
  const std::string stages = "  - {layers: [0, 9], devices: \"0-1\"}\n";
  std::string p = plan_file(stages, "1f1b", "micro_batch_size: 4\ngradient_bucket_mib: 0\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "gradient_bucket_mib", "expected a positive number, got '0'");
  p = plan_file(stages, "1f1b", "micro_batch_size: 4\ngradient_bucket_mib: 1e12\n");
  CHECK_SPEC_ERROR([&] { load_plan(p); }, p, "gradient_bucket_mib",
                   "a gradient bucket size in MiB above 0 and at most 1048576, got 1e+12");
  p = plan_file(stages, "1f1b", "micro_batch_size: 4\ngradient_bucket_mib: 1048576\n");
  CHECK(load_plan(p).gradient_bucket_mib == 1048576);
  p = plan_file(stages, "1f1b", "micro_batch_size: 4\ngradient_bucket_mib: 0.5\n");
  const Plan plan = load_plan(p);
  CHECK(plan.gradient_bucket_mib == 0.5);
  CHECK(plan_to_yaml(plan, false).find("gradient_bucket_mib: 0.5\n") != std::string::npos);
  CHECK(load_plan(plan_file(stages)).gradient_bucket_mib == 25.0);
  CHECK(plan_to_yaml(load_plan(plan_file(stages)), false).find("gradient_bucket") == std::string::npos);
}

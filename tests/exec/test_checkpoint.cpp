// File: test_checkpoint.cpp
// Checkpoint files: exact round trip, the `latest` marker, and the corrupt, truncated, foreign
// and missing cases, each named by file and field without touching the file.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <string>

#include "whale/exec/runtime/checkpoint.h"
#include "whale/plan/error.h"
#include "scratch_dir.h"

using namespace whale::exec;

namespace {

std::string fresh_dir(const std::string& name) { return whale::test::fresh_scratch_dir("ckpt_" + name); }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "no error";
}

Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.header = CheckpointHeader{1, 2, 0xabcdef0123456789ULL, 10, 42};
  c.state = {1.5f, -2.25f, 3e-8f, 0.0f};
  return c;
}

whale::plan::Plan two_stage_plan() {
  whale::plan::Plan plan;
  plan.model.family = "gpt";
  plan.model.hidden = 64;
  plan.micro_batch_size = 6;
  whale::plan::Stage a;
  a.first_layer = 0;
  a.end_layer = 3;
  a.devices = {0, 1};
  a.shares = {3, 3};
  whale::plan::Stage b = a;
  b.first_layer = 3;
  b.end_layer = 5;
  b.devices = {2};
  b.shares = {6};
  plan.stages = {a, b};
  return plan;
}

}  // namespace

TEST_CASE("a checkpoint reads back exactly, at the documented path") {
  const std::string dir = fresh_dir("roundtrip");
  const std::string path = checkpoint_path(dir, 10, 1);
  CHECK(path == dir + "/step-00000010/rank-00001.ckpt");
  write_checkpoint(path, sample_checkpoint());
  CHECK(read_all(path).size() == 56 + 4 * 4 + 8);
  const Checkpoint back = read_checkpoint(path, 0xabcdef0123456789ULL, 1);
  CHECK(back.header.step == 10);
  CHECK(back.header.seed == 42);
  CHECK(back.header.world_size == 2);
  CHECK(back.state == sample_checkpoint().state);
}

TEST_CASE("the header keeps the training precision; 0 reads as not recorded") {
  const std::string dir = fresh_dir("precision");
  const std::string path = checkpoint_path(dir, 10, 1);
  Checkpoint c = sample_checkpoint();
  c.header.precision = checkpoint_precision_code(whale::plan::Precision::fp16);
  write_checkpoint(path, c);
  const Checkpoint back = read_checkpoint(path, 0xabcdef0123456789ULL, 1);
  CHECK(back.header.precision == 3);  // 1 + Precision::fp16
  CHECK(checkpoint_precision_name(back.header.precision) == "fp16");
  CHECK(checkpoint_precision_name(checkpoint_precision_code(whale::plan::Precision::bf16)) == "bf16");
  CHECK(checkpoint_precision_name(0) == "unknown");
  write_checkpoint(path, sample_checkpoint());
  CHECK(read_checkpoint(path, 0xabcdef0123456789ULL, 1).header.precision == 0);
}

TEST_CASE("latest names the newest complete step") {
  const std::string dir = fresh_dir("latest");
  CHECK(error_of([&] { latest_step(dir); })
            .find(dir + "/latest: a checkpoint to resume from") == 0);
  mark_latest(dir, 5);
  CHECK(read_all(dir + "/latest") == "step-00000005\n");
  CHECK(latest_step(dir) == 5);
  mark_latest(dir, 12);
  CHECK(latest_step(dir) == 12);
  std::ofstream(dir + "/latest") << "garbage";
  CHECK(error_of([&] { latest_step(dir); }).find("a line \"step-NNNNNNNN\"") != std::string::npos);
}

TEST_CASE("a corrupt, truncated, foreign or alien checkpoint is an error and stays untouched") {
  const std::string dir = fresh_dir("bad");
  const std::string path = checkpoint_path(dir, 3, 0);
  Checkpoint c = sample_checkpoint();
  c.header.rank = 0;
  write_checkpoint(path, c);
  std::string bytes = read_all(path);
  bytes[60] ^= 0x01;  // one bit of the state
  std::ofstream(path, std::ios::binary) << bytes;
  CHECK(error_of([&] { read_checkpoint(path, c.header.fingerprint, 0); }) ==
        path + ": checksum: a checksum that matches the contents (hint: the file is corrupt)");
  CHECK(read_all(path) == bytes);

  write_checkpoint(path, c);
  CHECK(error_of([&] { read_checkpoint(path, 77, 0); })
            .find(path + ": header.fingerprint: a checkpoint of this plan and model") == 0);
  CHECK(error_of([&] { read_checkpoint(path, c.header.fingerprint, 1); }) ==
        path + ": header.rank: rank 1, got 0");
  const std::string head = read_all(path).substr(0, 70);
  std::ofstream(path, std::ios::binary) << head;
  CHECK(error_of([&] { read_checkpoint(path, c.header.fingerprint, 0); })
            .find(path + ": header.count:") == 0);
  std::ofstream(path, std::ios::binary) << "not a checkpoint at all, just some text.............";
  CHECK(error_of([&] { read_checkpoint(path, c.header.fingerprint, 0); })
            .find(path + ": header.magic:") == 0);
}

TEST_CASE("the plan fingerprint changes with the model, its optimizer's state and the stage layout only") {
  const whale::plan::Plan plan = two_stage_plan();
  whale::plan::Plan same = plan;
  same.stages[0].recompute = whale::plan::Recompute::full;  // state shape unchanged
  CHECK(plan_fingerprint(plan) == plan_fingerprint(same));
  whale::plan::Plan shares = plan;
  shares.stages[0].shares = {4, 2};
  CHECK(plan_fingerprint(plan) != plan_fingerprint(shares));
  whale::plan::Plan hidden = plan;
  hidden.model.hidden = 128;
  CHECK(plan_fingerprint(plan) != plan_fingerprint(hidden));
  whale::plan::Plan sharded = plan;
  sharded.stages[1].shard_optimizer = true;
  CHECK(plan_fingerprint(plan) != plan_fingerprint(sharded));
  whale::plan::Plan sgd = plan, adam = plan;  // SGD keeps one state buffer, Adam AdamW's two
  sgd.model.training.optimizer = "sgd";
  adam.model.training.optimizer = "adam";
  CHECK(plan_fingerprint(plan) != plan_fingerprint(sgd));
  CHECK(plan_fingerprint(plan) == plan_fingerprint(adam));
}

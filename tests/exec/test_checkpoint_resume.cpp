// File: test_checkpoint_resume.cpp
// --resume's choice of checkpoint: the latest when intact, else the newest older intact step
// with a warning naming the damaged file; the step list; a flipped byte is always detected.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "whale/exec/runtime/checkpoint_resume.h"
#include "whale/plan/error.h"
#include "scratch_dir.h"

using namespace whale::exec;

namespace {

constexpr uint64_t kFingerprint = 0x1234567890abcdefULL;

std::string fresh_dir(const std::string& name) { return whale::test::fresh_scratch_dir("resume_" + name); }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Rank 0's checkpoint of `step` whose state is {step, -step}.
void save(const std::string& dir, int64_t step) {
  Checkpoint c;
  c.header = CheckpointHeader{0, 1, kFingerprint, step, 7};
  c.state = {static_cast<float>(step), -static_cast<float>(step)};
  write_checkpoint(checkpoint_path(dir, step, 0), c);
  mark_latest(dir, step);
}

void flip_byte(const std::string& path, std::size_t offset) {
  std::string bytes = read_all(path);
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x40);
  std::ofstream(path, std::ios::binary) << bytes;
}

const AllRanksOk kAlone = [](bool ok) { return ok; };

}  // namespace

TEST_CASE("the step list is latest, then the older step folders, newest first") {
  const std::string dir = fresh_dir("steps");
  for (int64_t step : {2, 4, 6, 8}) save(dir, step);
  mark_latest(dir, 6);  // step 8 counts as half written
  std::system(("mkdir -p " + dir + "/step-0000000x " + dir + "/step-1").c_str());
  CHECK(checkpoint_steps(dir, 6) == std::vector<int64_t>{6, 4, 2});
  CHECK(checkpoint_steps(dir + "/missing", 3) == std::vector<int64_t>{3});
}

TEST_CASE("an intact latest checkpoint is taken without a warning") {
  const std::string dir = fresh_dir("intact");
  save(dir, 2);
  save(dir, 4);
  std::ostringstream warn;
  const Checkpoint c = resume_checkpoint(dir, kFingerprint, 0, kAlone, "W: ", warn);
  CHECK(c.header.step == 4);
  CHECK(c.state == std::vector<float>{4.0f, -4.0f});
  CHECK(warn.str().empty());
}

TEST_CASE("a corrupt or truncated latest falls back to the previous good one, named") {
  const std::string dir = fresh_dir("fallback");
  save(dir, 2);
  save(dir, 4);
  save(dir, 6);
  const std::string six = checkpoint_path(dir, 6, 0);
  const std::string four = checkpoint_path(dir, 4, 0);
  flip_byte(six, 60);  // one byte of the state
  const std::string truncated = read_all(four).substr(0, 70);
  std::ofstream(four, std::ios::binary) << truncated;
  std::ostringstream warn;
  const Checkpoint c = resume_checkpoint(dir, kFingerprint, 0, kAlone, "W: ", warn);
  CHECK(c.header.step == 2);
  CHECK(c.state == std::vector<float>{2.0f, -2.0f});
  CHECK(warn.str() ==
        "W: " + six + ": checksum: a checksum that matches the contents (hint: the file is "
        "corrupt); falling back to the checkpoint of step 4\n"
        "W: " + four + ": header.count: 72 bytes for 2 floats, but the file has 70 (hint: the "
        "file is truncated or corrupt); falling back to the checkpoint of step 2\n");
  CHECK(read_all(dir + "/latest") == "step-00000006\n");  // nothing is rewritten
}

TEST_CASE("a step that another rank cannot read is skipped on every rank") {
  const std::string dir = fresh_dir("other_rank");
  save(dir, 3);
  save(dir, 5);
  int calls = 0;
  // The other rank fails on the first (latest) step only.
  const AllRanksOk other_fails_first = [&](bool ok) { return ok && ++calls > 1; };
  std::ostringstream warn;
  const Checkpoint c = resume_checkpoint(dir, kFingerprint, 0, other_fails_first, "W: ", warn);
  CHECK(c.header.step == 3);
  CHECK(calls == 1);  // the oldest step is read without an agreement
  CHECK(warn.str().empty());
}

TEST_CASE("when no step is intact, the oldest step's error is thrown") {
  const std::string dir = fresh_dir("none");
  save(dir, 1);
  save(dir, 2);
  flip_byte(checkpoint_path(dir, 1, 0), 0);
  flip_byte(checkpoint_path(dir, 2, 0), 70);
  std::ostringstream warn;
  std::string error = "no error";
  try {
    resume_checkpoint(dir, kFingerprint, 0, kAlone, "W: ", warn);
  } catch (const whale::Error& e) {
    error = e.what();
  }
  CHECK(error.find(checkpoint_path(dir, 1, 0) + ": header.magic:") == 0);
  CHECK(warn.str().find(checkpoint_path(dir, 2, 0) + ": checksum:") == 3);
}

TEST_CASE("flipping any single byte of a checkpoint is detected") {
  const std::string dir = fresh_dir("every_byte");
  save(dir, 9);
  const std::string path = checkpoint_path(dir, 9, 0);
  const std::string good = read_all(path);
  int detected = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    std::ofstream(path, std::ios::binary) << bad;
    try {
      read_checkpoint(path, kFingerprint, 0);
    } catch (const whale::Error&) {
      ++detected;
    }
  }
  CHECK(good.size() == 56 + 2 * 4 + 8);
  CHECK(detected == static_cast<int>(good.size()));
}

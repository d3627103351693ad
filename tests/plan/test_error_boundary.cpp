// File: test_error_boundary.cpp
// The error boundary of the tools (run_guarded), WHALE_CHECK and AtomicFile, on exact cases.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "whale/plan/atomic_file.h"
#include "whale/plan/check.h"
#include "whale/plan/error.h"
#include "whale/plan/tool_boundary.h"

namespace {

std::string scratch(const std::string& name) {
  const std::string dir = std::string(WHALE_BINARY_DIR) + "/tests/scratch";
  ::mkdir((std::string(WHALE_BINARY_DIR) + "/tests").c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  return dir + "/" + name;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("run_guarded maps what escapes to exit codes") {
  CHECK(whale::run_guarded("t", [] { return 0; }) == 0);
  CHECK(whale::run_guarded("t", [] { return 7; }) == 7);
  CHECK(whale::run_guarded("t", []() -> int { throw whale::Error("f.yaml", "a.b", "x"); }) ==
        whale::kExitBadInput);
  CHECK(whale::run_guarded("t", []() -> int { throw std::runtime_error("boom"); }) ==
        whale::kExitInternal);
  CHECK(whale::run_guarded("t", []() -> int { WHALE_CHECK(1 + 1 == 3, "arithmetic"); return 0; }) ==
        whale::kExitInternal);
  CHECK(whale::run_guarded("t", []() -> int { throw 42; }) == whale::kExitInternal);
}

TEST_CASE("WHALE_CHECK names the file, the line, the condition and the message") {
  int line = 0;
  try {
    line = __LINE__ + 1;
    WHALE_CHECK(2 < 1, "two is not below " + std::to_string(1));
    FAIL("expected an InternalError");
  } catch (const whale::InternalError& e) {
    CHECK(std::string(e.what()) ==
          "test_error_boundary.cpp:" + std::to_string(line) + ": 2 < 1: two is not below 1");
  }
  WHALE_CHECK(1 < 2, "never evaluated");
}

TEST_CASE("AtomicFile replaces the target whole, or leaves it as it was") {
  const std::string path = scratch("atomic.txt");
  whale::write_file_atomically(path, "first\n");
  CHECK(read_all(path) == "first\n");
  {
    whale::AtomicFile file(path, "--out");
    file.write("second, never committed\n");
    CHECK(read_all(path) == "first\n");  // the temporary file takes the text
  }
  CHECK(read_all(path) == "first\n");
  whale::AtomicFile file(path, "--out");
  file.write("third\n");
  file.commit();
  CHECK(read_all(path) == "third\n");
}

TEST_CASE("AtomicFile failures name the file, the field and the reason") {
  try {
    whale::write_file_atomically("/dev/full", "x", "--out");
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()) ==
          "/dev/full: --out: a file that can be written completely (hint: the disk is full; nothing was replaced)");
  }
  const std::string missing = scratch("no-such-folder/file.txt");
  try {
    whale::write_file_atomically(missing, "x", "--trace");
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(e.file() == missing);
    CHECK(e.yaml_path() == "--trace");
    CHECK(e.hint() == "the folder " + scratch("no-such-folder") + " does not exist");
  }
  whale::write_file_atomically("/dev/null", "discarded");  // a device is written in place
}

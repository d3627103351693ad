// File: test_runs_csv.cpp
// The CSV of measured runs: a good file loads exactly (paths relative to the CSV); every bad
// input gives one error naming the file, the line and column, what was expected and a hint.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "whale/plan/error.h"
#include "whale/sim/runs_csv.h"

using namespace whale;
using namespace whale::sim;

namespace {

std::string scratch_csv(const std::string& name, const std::string& text) {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/calibrate-scratch";
  std::filesystem::create_directories(folder);
  const std::string path = folder + "/" + name + ".csv";
  std::ofstream(path) << text;
  return path;
}

Error error_of(const std::string& path) {
  try {
    load_runs_csv(path);
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected a whale::Error from " << path);
  return Error("", "", "");
}

const std::string kHeader = "plan,step_time_s,peak_memory_gib,failed\n";

}  // namespace

TEST_CASE("a runs CSV loads every field; blank lines and comments are skipped") {
  const std::string path = scratch_csv(
      "good", "# measured\n" + kHeader + "a.yaml,0.25,1.5,false\n\n/abs/b.yaml,,2,\nc.yaml,,,true\n");
  const std::vector<MeasuredRun> runs = load_runs_csv(path);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].plan_path == std::string(WHALE_BINARY_DIR) + "/calibrate-scratch/a.yaml");
  CHECK(runs[0].line == 3);
  CHECK(*runs[0].step_time_s == 0.25);
  CHECK(*runs[0].peak_memory_bytes == 1.5 * kBytesPerGiB);
  CHECK_FALSE(runs[0].failed);
  CHECK(runs[1].plan_path == "/abs/b.yaml");
  CHECK_FALSE(runs[1].step_time_s);
  CHECK(runs[2].failed);
  CHECK_FALSE(runs[2].peak_memory_bytes);
}

TEST_CASE("each bad runs CSV names the line and column of the field") {
  struct Case {
    const char* name;
    std::string text;
    const char* where;
    const char* words;
  };
  const Case cases[] = {
      {"header", "plan,time\n", "line 1", "the header 'plan,step_time_s,peak_memory_gib,failed', got 'plan,time'"},
      {"no_rows", kHeader, "", "at least one run"},
      {"fields", kHeader + "a.yaml,0.25\n", "line 2", "expected 4 comma-separated fields"},
      {"time_text", kHeader + "a.yaml,fast,,\n", "line 2, column 2 (step_time_s)", "got 'fast'"},
      {"time_negative", kHeader + "a.yaml,-1,,\n", "line 2, column 2 (step_time_s)", "a number > 0 and <= 86400 (seconds)"},
      {"memory_nan", kHeader + "a.yaml,,nan,\n", "line 2, column 3 (peak_memory_gib)", "got 'nan'"},
      {"failed_word", kHeader + "a.yaml,1,,yes\n", "line 2, column 4 (failed)", "true, false or nothing"},
      {"failed_timed", kHeader + "a.yaml,1,,true\n", "line 2, column 2 (step_time_s)", "no step time in a failed run"},
      {"no_plan", kHeader + ",1,,\n", "line 2, column 1 (plan)", "a plan path"},
      {"nothing", kHeader + "a.yaml,,,false\n", "line 2", "the row measures nothing"},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const std::string path = scratch_csv(c.name, c.text);
    const Error e = error_of(path);
    CHECK(e.file() == path);
    CHECK(e.yaml_path() == c.where);
    CHECK(std::string(e.what()).find(c.words) != std::string::npos);
    CHECK_FALSE(e.hint().empty());
  }
}

TEST_CASE("a missing or empty runs CSV is one error naming the file") {
  const std::string empty = scratch_csv("empty", "");
  CHECK(std::string(error_of(empty).what()).find("a CSV file with content, got an empty file") != std::string::npos);
  const std::string missing = std::string(WHALE_BINARY_DIR) + "/calibrate-scratch/missing.csv";
  CHECK(error_of(missing).file() == missing);
}

// File: test_chrome_trace_read.cpp
// Reading Chrome trace JSON back into timeline events: what write_chrome_trace writes comes
// back unchanged, a plain Chrome trace (no metadata, no args) reads by its tids and names, and
// bad traces fail naming the file and the field.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/timeline.h"

using namespace whale;

namespace {

/// A path in the build folder's scratch space for these tests.
std::string scratch_path(const std::string& name) {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/tests/trace-scratch";
  std::filesystem::create_directories(folder);
  return folder + "/" + name;
}

std::string scratch(const std::string& name, const std::string& text) {
  const std::string path = scratch_path(name);
  std::ofstream(path) << text;
  return path;
}

/// The message of the whale::Error that reading `text` as a trace of `devices` devices throws.
std::string read_error(const std::string& text, int devices = 2) {
  const std::string path = scratch("bad.json", text);
  try {
    plan::read_chrome_trace_file(path, devices);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("trace read: what write_chrome_trace writes reads back event for event") {
  const std::vector<plan::TimelineEvent> written = {
      {0, "compute", "F s0 mb1", 0, 1, 0.5, 0.25},
      {1, "pp", "send act s0 mb1", 0, 1, 0.75, 0.125},
      {1, "dp", "reduce_bucket s1 b2", 1, -1, 1.5, 0.0625},
      {1, "bridge", "bridge s1 mb0", 1, 0, 2.0, 0.5},  // a lane beyond the known five: tid 5
  };
  const std::string path = scratch_path("roundtrip.json");
  plan::write_chrome_trace_file(path, written, {"dev 0 cpu", "dev 1 cpu"});
  const std::vector<plan::TimelineEvent> read = plan::read_chrome_trace_file(path, 2);
  REQUIRE(read.size() == written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    CAPTURE(i);
    CHECK(read[i].device == written[i].device);
    CHECK(read[i].lane == written[i].lane);
    CHECK(read[i].name == written[i].name);
    CHECK(read[i].stage == written[i].stage);
    CHECK(read[i].micro_batch == written[i].micro_batch);
    // Microseconds with three decimals: these binary fractions of a second are exact there.
    CHECK(read[i].start_s == doctest::Approx(written[i].start_s).epsilon(1e-12));
    CHECK(read[i].duration_s == doctest::Approx(written[i].duration_s).epsilon(1e-12));
  }
}

TEST_CASE("trace read: a plain Chrome trace, a bare list without metadata or args") {
  const std::string path = scratch("plain.json",
                                   "[{\"name\": \"B s1 mb3\", \"ph\": \"X\", \"pid\": 1, \"tid\": 0, "
                                   "\"ts\": 2000, \"dur\": 500},\n"
                                   " {\"name\": \"marker\", \"ph\": \"i\", \"pid\": 0, \"ts\": 1},\n"
                                   " {\"name\": \"reduce_bucket s0 b1\", \"ph\": \"X\", \"pid\": 0, "
                                   "\"tid\": 3, \"ts\": 0, \"dur\": 250},\n"
                                   " {\"name\": \"copy\", \"ph\": \"X\", \"pid\": 0, \"tid\": 9, "
                                   "\"ts\": 10, \"dur\": 0}]\n");
  const std::vector<plan::TimelineEvent> read = plan::read_chrome_trace_file(path, 2);
  REQUIRE(read.size() == 3);  // the instant event is skipped
  CHECK(read[0].device == 1);
  CHECK(read[0].lane == "compute");
  CHECK(read[0].stage == 1);
  CHECK(read[0].micro_batch == 3);
  CHECK(read[0].start_s == doctest::Approx(0.002).epsilon(1e-12));
  CHECK(read[0].duration_s == doctest::Approx(0.0005).epsilon(1e-12));
  CHECK(read[1].lane == "dp");
  CHECK(read[1].stage == 0);
  CHECK(read[1].micro_batch == -1);
  CHECK(read[2].lane == "tid 9");
  CHECK(read[2].stage == -1);
}

TEST_CASE("trace read: bad traces name the file and the field") {
  CHECK_THROWS_WITH_AS(plan::read_chrome_trace_file(scratch_path("none.json"), 2),
                       doctest::Contains("none.json"), Error);
  CHECK(read_error("{\"traceEvents\": [").find("malformed") != std::string::npos);
  CHECK(read_error("{\"events\": []}").find("traceEvents") != std::string::npos);
  CHECK(read_error("{\"traceEvents\": []}").find("at least one complete event") != std::string::npos);
  const std::string event = "{\"traceEvents\": [{\"name\": \"F s0 mb0\", \"ph\": \"X\", \"pid\": 0, ";
  CHECK(read_error(event + "\"ts\": 0}]}").find("traceEvents[0].dur: missing field") != std::string::npos);
  CHECK(read_error(event + "\"ts\": 0, \"dur\": -5}]}").find("traceEvents[0].dur: a duration in "
                                                             "microseconds >= 0, got '-5'") != std::string::npos);
  CHECK(read_error("{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": 0, \"dur\": 1}]}")
            .find("traceEvents[0].name: missing field") != std::string::npos);
  const std::string far = read_error("{\"traceEvents\": [{\"name\": \"F s0 mb0\", \"ph\": \"X\", "
                                     "\"pid\": 7, \"ts\": 0, \"dur\": 1}]}");
  CHECK(far.find("bad.json: traceEvents[0].pid: a device id in 0..1 (the plan's cluster has 2 "
                 "devices), got 7") != std::string::npos);
}

// File: test_timeline.cpp
// write_chrome_trace: the exact text of a two-event trace, escaping, and file errors.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/timeline.h"

using whale::plan::TimelineEvent;
using whale::plan::write_chrome_trace;

namespace {

std::string trace_of(const std::vector<TimelineEvent>& events,
                     const std::vector<std::string>& labels) {
  std::ostringstream out;
  write_chrome_trace(out, events, labels);
  return out.str();
}

}  // namespace

TEST_CASE("two events give the exact Chrome trace") {
  const std::vector<TimelineEvent> events = {
      {1, "pp", "send s0 mb0", 0, 0, 0.0015, 0.00025},
      {0, "compute", "F s0 mb0", 0, 0, 0.0, 0.0015},
  };
  const std::string expected =
      "{\"traceEvents\":[\n"
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"dev 0 a100\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"dev 1 v100\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"pp\"}},\n"
      "{\"name\":\"send s0 mb0\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":1500.000,\"dur\":250.000,"
      "\"args\":{\"stage\":0,\"micro_batch\":0}},\n"
      "{\"name\":\"F s0 mb0\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":0.000,\"dur\":1500.000,"
      "\"args\":{\"stage\":0,\"micro_batch\":0}}\n"
      "],\"displayTimeUnit\":\"ms\"}\n";
  CHECK(trace_of(events, {"dev 0 a100", "dev 1 v100"}) == expected);
}

TEST_CASE("fixed lane ids, unlabelled devices and string escaping") {
  const std::vector<TimelineEvent> events = {
      {2, "optimizer", "step \"s1\"\\\n", 1, -1, 1e-6, 2e-6},
      {2, "dp", "allreduce s1", 1, -1, 0, 1e-6},
  };
  const std::string trace = trace_of(events, {"dev 0 \"x\""});
  // Device 0 has a label but no events; device 2 has events but no label.
  CHECK(trace.find("\"pid\":0,\"tid\":0,\"args\":{\"name\":\"dev 0 \\\"x\\\"\"}") != std::string::npos);
  CHECK(trace.find("\"pid\":2,\"tid\":0,\"args\":{\"name\":\"dev 2\"}") != std::string::npos);
  CHECK(trace.find("\"pid\":2,\"tid\":3,\"args\":{\"name\":\"dp\"}") != std::string::npos);
  CHECK(trace.find("\"pid\":2,\"tid\":4,\"args\":{\"name\":\"optimizer\"}") != std::string::npos);
  CHECK(trace.find("{\"name\":\"step \\\"s1\\\"\\\\\\n\",\"ph\":\"X\",\"pid\":2,\"tid\":4,"
                   "\"ts\":1.000,\"dur\":2.000,\"args\":{\"stage\":1,\"micro_batch\":-1}}") !=
        std::string::npos);
  CHECK(trace == trace_of(events, {"dev 0 \"x\""}));  // deterministic
}

TEST_CASE("an unwritable trace file is an error naming the path") {
  try {
    whale::plan::write_chrome_trace_file("/nonexistent-dir/trace.json", {}, {});
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(e.file() == "/nonexistent-dir/trace.json");
    CHECK(std::string(e.what()) ==
          "/nonexistent-dir/trace.json: --trace: a file that can be written (hint: the folder "
          "/nonexistent-dir does not exist)");
  }
}

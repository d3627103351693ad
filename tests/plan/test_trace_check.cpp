// File: test_trace_check.cpp
// A measured trace held against its plan (trace_check.h): the trace of pp2-1f1b passes; one
// recorded from another plan (another stage's device, a stage or micro-batch the plan lacks, a
// device with no compute) fails naming the trace and traceEvents.
#include <doctest/doctest.h>

#include "whale/plan/error.h"
#include "whale/plan/trace_check.h"

using namespace whale::plan;

namespace {

TimelineEvent compute(int device, int stage, int micro_batch) {
  TimelineEvent e;
  e.device = device;
  e.lane = "compute";
  e.stage = stage;
  e.micro_batch = micro_batch;
  e.name = "F s" + std::to_string(stage) + " mb" + std::to_string(micro_batch);
  return e;
}

std::string error_of(const std::vector<TimelineEvent>& events, const Plan& plan) {
  try {
    check_trace_matches_plan(events, plan, "t.json");
  } catch (const whale::Error& e) {
    CHECK(e.file() == "t.json");
    CHECK(e.yaml_path() == "traceEvents");
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a trace belongs to its plan: stages on their devices, its micro-batches, every device") {
  const Plan plan = load_plan("configs/plans/tiny/pp2-1f1b.yaml");  // s0 on 0, s1 on 1, 4 micro-batches
  TimelineEvent send = compute(1, 0, 0);
  send.lane = "pp";  // other lanes are not held to the plan
  const std::vector<TimelineEvent> good = {compute(0, 0, 3), compute(1, 1, 0), send};
  CHECK(error_of(good, plan) == "no error");
  CHECK(error_of({compute(0, 0, 0), compute(1, 0, 0)}, plan).find(
            "stage 0 on the plan's devices 0, got 'F s0 mb0' on device 1") != std::string::npos);
  CHECK(error_of({compute(0, 0, 0), compute(1, 2, 0)}, plan).find(
            "events of the plan's 2 stage(s), got 'F s2 mb0' on device 1") != std::string::npos);
  CHECK(error_of({compute(0, 0, 4), compute(1, 1, 0)}, plan).find(
            "the plan's 4 micro-batch(es), got 'F s0 mb4' on device 0") != std::string::npos);
  CHECK(error_of({compute(0, 0, 0)}, plan).find("compute events on every device of the plan, got none on device(s) 1") !=
        std::string::npos);
}

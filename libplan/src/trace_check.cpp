// File: trace_check.cpp
// A measured trace held against the plan it claims to measure (trace_check.h).
#include "whale/plan/trace_check.h"

#include <algorithm>
#include <set>

#include "whale/plan/error.h"

namespace whale::plan {
namespace {

constexpr const char* kHint = "the trace was recorded from another plan; compare it with the plan whale-run ran";

}  // namespace

void check_trace_matches_plan(const std::vector<TimelineEvent>& events, const Plan& plan, const std::string& path) {
  const int stages = static_cast<int>(plan.stages.size());
  std::set<int> seen;
  for (const TimelineEvent& e : events) {
    if (e.lane != "compute") continue;
    seen.insert(e.device);
    const std::string what = "'" + e.name + "' on device " + std::to_string(e.device);
    if (e.stage >= stages) {
      throw Error(path, "traceEvents",
                  "events of the plan's " + std::to_string(stages) + " stage(s), got " + what, kHint);
    }
    if (e.stage >= 0) {
      const std::vector<int>& devices = plan.stages[e.stage].devices;
      if (!plan.stages[e.stage].holds(e.device)) {
        throw Error(path, "traceEvents",
                    "stage " + std::to_string(e.stage) + " on the plan's devices " + format_device_list(devices) +
                        ", got " + what,
                    kHint);
      }
    }
    if (e.micro_batch >= plan.micro_batches) {
      throw Error(path, "traceEvents",
                  "the plan's " + std::to_string(plan.micro_batches) + " micro-batch(es), got " + what, kHint);
    }
  }
  std::vector<int> missing;
  for (const Stage& stage : plan.stages) {
    for (int d : stage.devices) {
      if (!seen.count(d) && std::find(missing.begin(), missing.end(), d) == missing.end()) missing.push_back(d);
    }
  }
  if (!missing.empty()) {
    std::sort(missing.begin(), missing.end());
    throw Error(path, "traceEvents",
                "compute events on every device of the plan, got none on device(s) " + format_device_list(missing),
                kHint);
  }
}

}  // namespace whale::plan

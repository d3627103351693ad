// File: trace_check.h
// Whether a measured trace belongs to a plan: its compute events name the plan's stages and
// micro-batches on the devices the plan gives those stages, and every device of the plan has
// some. whale-sim --compare refuses a trace recorded from another plan.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/timeline.h"

namespace whale::plan {

/// Throws whale::Error naming `path` (the trace) and "traceEvents" when a compute event names
/// a stage the plan does not have, a stage on a device the plan does not give it, or a
/// micro-batch beyond the plan's count, or when a device of the plan's stages has no compute
/// event. Events outside the compute lane, and without a stage or micro-batch, are not held
/// to the plan.
void check_trace_matches_plan(const std::vector<TimelineEvent>& events, const Plan& plan, const std::string& path);

}  // namespace whale::plan

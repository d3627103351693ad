// File: timeline.h
// Timelines of one step (predicted by whale-sim or measured by whale-run) and their Chrome
// trace JSON form, which opens in Perfetto: one process per device, one thread per lane.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "whale/plan/units.h"

namespace whale::plan {

struct TimelineEvent {
  int device = 0;
  std::string lane;        // "compute", "tp", "pp", "dp", "optimizer"
  std::string name;        // e.g. "F s1 mb3", "B s1 mb3", "reduce_bucket s1 b0"
  int stage = -1;
  int micro_batch = -1;
  Seconds start_s = 0;
  Seconds duration_s = 0;
};

/// Writes events as Chrome trace JSON ("traceEvents", complete events "ph":"X", microseconds).
/// `device_labels[d]` names device d's track (e.g. "dev 3 a100-sxm4-80gb"). Output is
/// deterministic for the same events.
void write_chrome_trace(std::ostream& out, const std::vector<TimelineEvent>& events,
                        const std::vector<std::string>& device_labels);
/// As above, to a file; throws whale::Error if it cannot be written.
void write_chrome_trace_file(const std::string& path, const std::vector<TimelineEvent>& events,
                             const std::vector<std::string>& device_labels);

}  // namespace whale::plan

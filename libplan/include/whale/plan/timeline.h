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

/// Reads a Chrome trace JSON file: whale's own (write_chrome_trace) or any other with complete
/// events ("ph":"X", "name", "ts" and "dur" in microseconds, "pid" the device, "tid" the lane),
/// either as {"traceEvents": [...]} or as a bare list of events. Returns the complete events in
/// file order. A lane is the "thread_name" metadata of its pid and tid when the file has one,
/// else the name that write_chrome_trace gives that tid ("tid N" beyond them); stage and
/// micro-batch come from "args" when given, else from the name's "sS" and "mbM" words (-1 when
/// absent). Events of other phases are skipped. Throws whale::Error naming the file and the
/// field (`traceEvents[3].dur`) for a missing or malformed file, no traceEvents, a complete
/// event without name, ts or dur, a negative dur, or a pid outside 0..device_count-1.
std::vector<TimelineEvent> read_chrome_trace_file(const std::string& path, int device_count);

}  // namespace whale::plan

// File: timeline_lanes.h
// The fixed Chrome trace thread ids of the known timeline lanes, shared by the trace writer
// and reader. Private to libplan.
#pragma once

#include <map>
#include <string>

namespace whale::plan {

/// compute 0, tp 1, pp 2, dp 3, optimizer 4; write_chrome_trace numbers other lanes from 5 on.
const std::map<std::string, int>& known_lane_tids();

}  // namespace whale::plan

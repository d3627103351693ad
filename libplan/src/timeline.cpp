// File: timeline.cpp
// Chrome trace JSON of a timeline: process and thread names as metadata events, then one
// complete event per timeline event, in the order given. Fixed formatting, so deterministic.
#include "whale/plan/timeline.h"

#include <cstdio>
#include <sstream>
#include <map>
#include <set>

#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/json_text.h"
#include "timeline_lanes.h"

namespace whale::plan {

const std::map<std::string, int>& known_lane_tids() {
  static const std::map<std::string, int> tids = {
      {"compute", 0}, {"tp", 1}, {"pp", 2}, {"dp", 3}, {"optimizer", 4}};
  return tids;
}

namespace {

/// The known lanes' fixed thread ids; other lanes follow from 5 in name order.
std::map<std::string, int> lane_tids(const std::vector<TimelineEvent>& events) {
  std::map<std::string, int> tids = known_lane_tids();
  std::set<std::string> others;
  for (const auto& e : events) {
    if (!tids.count(e.lane)) others.insert(e.lane);
  }
  int next = static_cast<int>(known_lane_tids().size());
  for (const auto& lane : others) tids[lane] = next++;
  return tids;
}

/// Seconds as microseconds with three decimals.
std::string microseconds(Seconds s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e6);
  return buf;
}

std::string metadata(const char* what, int pid, int tid, const std::string& name) {
  return std::string("{\"name\":\"") + what + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + json_quote(name) + "}}";
}

}  // namespace

void write_chrome_trace(std::ostream& out, const std::vector<TimelineEvent>& events,
                        const std::vector<std::string>& device_labels) {
  const std::map<std::string, int> tids = lane_tids(events);
  // Devices: every labelled one, plus any that only appears in events; each with its lanes.
  std::map<int, std::set<int>> lanes_of_device;
  for (size_t d = 0; d < device_labels.size(); ++d) lanes_of_device[static_cast<int>(d)];
  for (const auto& e : events) lanes_of_device[e.device].insert(tids.at(e.lane));
  std::map<int, std::string> lane_names;
  for (const auto& [lane, tid] : tids) lane_names[tid] = lane;

  std::vector<std::string> records;
  for (const auto& [device, lanes] : lanes_of_device) {
    const bool labelled = device >= 0 && device < static_cast<int>(device_labels.size());
    records.push_back(metadata("process_name", device, 0,
                               labelled ? device_labels[device] : "dev " + std::to_string(device)));
    for (int tid : lanes) records.push_back(metadata("thread_name", device, tid, lane_names[tid]));
  }
  for (const auto& e : events) {
    records.push_back("{\"name\":" + json_quote(e.name) + ",\"ph\":\"X\",\"pid\":" +
                      std::to_string(e.device) + ",\"tid\":" + std::to_string(tids.at(e.lane)) +
                      ",\"ts\":" + microseconds(e.start_s) + ",\"dur\":" +
                      microseconds(e.duration_s) + ",\"args\":{\"stage\":" +
                      std::to_string(e.stage) + ",\"micro_batch\":" +
                      std::to_string(e.micro_batch) + "}}");
  }
  out << "{\"traceEvents\":[\n";
  for (size_t i = 0; i < records.size(); ++i) {
    out << records[i] << (i + 1 < records.size() ? ",\n" : "\n");
  }
  out << "],\"displayTimeUnit\":\"ms\"}\n";
}

void write_chrome_trace_file(const std::string& path, const std::vector<TimelineEvent>& events,
                             const std::vector<std::string>& device_labels) {
  std::ostringstream out;
  write_chrome_trace(out, events, device_labels);
  write_file_atomically(path, out.str(), "--trace");
}

}  // namespace whale::plan

// File: timeline_read.cpp
// Reads a Chrome trace JSON file back into timeline events (timeline.h): whale's own traces
// and plain Chrome traces with the same op names. JSON is YAML flow syntax, so the strict YAML
// reader parses it and names the file and field in every error.
#include <map>
#include <sstream>
#include <utility>

#include "timeline_lanes.h"
#include "whale/plan/text_file.h"
#include "whale/plan/timeline.h"
#include "yaml_reader.h"

namespace whale::plan {
namespace {

using LaneKey = std::pair<int, int>;  // (pid, tid)

int tid_of(const YamlField& event) { return event.has("tid") ? event.get("tid").integer() : 0; }

/// Lane names from "thread_name" metadata events, by (pid, tid).
std::map<LaneKey, std::string> named_lanes(const std::vector<YamlField>& events) {
  std::map<LaneKey, std::string> lanes;
  for (const YamlField& e : events) {
    if (!e.is_map() || !e.has("ph") || !e.has("name") || !e.has("args")) continue;
    if (e.get("ph").text() != "M" || e.get("name").text() != "thread_name") continue;
    const YamlField args = e.get("args");
    if (args.has("name") && e.has("pid")) {
      lanes[{e.get("pid").integer(), tid_of(e)}] = args.get("name").text();
    }
  }
  return lanes;
}

/// The lane that write_chrome_trace gives a thread id, or "tid N" beyond the known lanes.
std::string default_lane(int tid) {
  for (const auto& [lane, known_tid] : known_lane_tids()) {
    if (known_tid == tid) return lane;
  }
  return "tid " + std::to_string(tid);
}

/// The number after `prefix` in a word of `name` ("s1" -> 1 for prefix "s"), or -1.
int number_in_name(const std::string& name, const std::string& prefix) {
  std::istringstream words(name);
  std::string word;
  while (words >> word) {
    if (word.size() <= prefix.size() || word.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = word.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 9) {
      return std::stoi(digits);
    }
  }
  return -1;
}

int index_from(const YamlField& event, const std::string& arg, const std::string& prefix,
               const std::string& name) {
  if (event.has("args") && event.get("args").has(arg)) return event.get("args").get(arg).integer();
  return number_in_name(name, prefix);
}

TimelineEvent read_complete_event(const YamlField& e, int device_count,
                                  const std::map<LaneKey, std::string>& lanes) {
  TimelineEvent event;
  event.name = e.get("name").text();
  const YamlField pid = e.get("pid");
  event.device = pid.integer();
  if (event.device < 0 || event.device >= device_count) {
    pid.fail("a device id in 0.." + std::to_string(device_count - 1) + " (the plan's cluster has " +
                 std::to_string(device_count) + " devices), got " + std::to_string(event.device),
             "was this trace measured with this plan?");
  }
  const int tid = tid_of(e);
  const auto named = lanes.find({event.device, tid});
  event.lane = named != lanes.end() ? named->second : default_lane(tid);
  event.start_s = e.get("ts").number() * 1e-6;
  const YamlField dur = e.get("dur");
  if (dur.number() < 0) dur.fail("a duration in microseconds >= 0, got '" + dur.node().Scalar() + "'");
  event.duration_s = dur.number() * 1e-6;
  event.stage = index_from(e, "stage", "s", event.name);
  event.micro_batch = index_from(e, "micro_batch", "mb", event.name);
  return event;
}

}  // namespace

std::vector<TimelineEvent> read_chrome_trace_file(const std::string& path, int device_count) {
  const YamlField root = parse_yaml_text(read_text_file(path, "Chrome trace JSON"), path, true);
  if (!root.is_sequence() && !(root.is_map() && root.has("traceEvents"))) {
    root.fail("a Chrome trace: an object with \"traceEvents\" or a list of events",
              "give whale-run's or whale-sim's --trace output");
  }
  const YamlField list = root.is_sequence() ? root : root.get("traceEvents");
  const std::vector<YamlField> records = list.elements();
  const std::map<LaneKey, std::string> lanes = named_lanes(records);
  std::vector<TimelineEvent> events;
  for (const YamlField& record : records) {
    if (record.get("ph").text() != "X") continue;  // metadata, instants, counters: not timed ops
    events.push_back(read_complete_event(record, device_count, lanes));
  }
  if (events.empty()) {
    list.fail("at least one complete event (\"ph\":\"X\")", "was the trace written with --trace?");
  }
  return events;
}

}  // namespace whale::plan

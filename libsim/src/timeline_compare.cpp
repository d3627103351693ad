// File: timeline_compare.cpp
// Sums a predicted and a measured timeline per op class and per device, and prints the result.
#include "whale/sim/timeline_compare.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "whale/plan/json_text.h"
#include "whale/sim/report.h"

namespace whale::sim {
namespace {

Seconds makespan(const std::vector<plan::TimelineEvent>& events) {
  const Seconds first_s = timeline_start(events);
  Seconds last_s = first_s;
  for (const plan::TimelineEvent& e : events) last_s = std::max(last_s, e.start_s + e.duration_s);
  return last_s - first_s;
}

std::string ratio_text(Seconds predicted_s, Seconds measured_s, const char* format) {
  if (!(measured_s > 0)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, time_ratio(predicted_s, measured_s));
  return buffer;
}

std::string ratio_json(Seconds predicted_s, Seconds measured_s) {
  return measured_s > 0 ? format_number(time_ratio(predicted_s, measured_s)) : "null";
}

}  // namespace

Seconds timeline_start(const std::vector<plan::TimelineEvent>& events) {
  if (events.empty()) return 0;
  Seconds first_s = events.front().start_s;
  for (const plan::TimelineEvent& e : events) first_s = std::min(first_s, e.start_s);
  return first_s;
}

double time_ratio(Seconds predicted_s, Seconds measured_s) {
  return measured_s > 0 ? predicted_s / measured_s : 0;
}

TimelineComparison compare_timelines(const std::vector<plan::TimelineEvent>& predicted,
                                     const std::vector<plan::TimelineEvent>& measured,
                                     const std::vector<int>& devices) {
  const bool split = has_split_backward(predicted) || has_split_backward(measured);
  TimelineComparison out;
  out.predicted_step_s = makespan(predicted);
  out.measured_step_s = makespan(measured);
  std::map<int, std::size_t> row_of_device;
  for (int d : devices) {
    row_of_device[d] = out.devices.size();
    out.devices.push_back({d, 0, 0});
  }
  std::map<OpClass, ClassTimes> classes;
  for (const bool is_measured : {false, true}) {
    for (const plan::TimelineEvent& e : is_measured ? measured : predicted) {
      const OpClass op_class = op_class_of(e.name, split);
      ClassTimes& row = classes[op_class];
      row.op_class = op_class;
      (is_measured ? row.measured_s : row.predicted_s) += e.duration_s;
      ++(is_measured ? row.measured_events : row.predicted_events);
      const auto device_row = row_of_device.find(e.device);
      if (e.lane == "compute" && device_row != row_of_device.end()) {
        DeviceBusy& busy = out.devices[device_row->second];
        (is_measured ? busy.measured_compute_s : busy.predicted_compute_s) += e.duration_s;
      }
    }
  }
  for (OpClass c : all_op_classes()) {
    if (classes.count(c)) out.classes.push_back(classes.at(c));
  }
  return out;
}

std::string format_comparison_text(const TimelineComparison& c) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line,
                "Predicted vs measured (ratio = predicted / measured)\n"
                "  step time            predicted %.6f s   measured %.6f s   ratio %s\n",
                c.predicted_step_s, c.measured_step_s,
                ratio_text(c.predicted_step_s, c.measured_step_s, "%.3f").c_str());
  out << line << "\n  class                 predicted_s    measured_s    ratio   events pred/meas\n";
  for (const ClassTimes& row : c.classes) {
    std::snprintf(line, sizeof line, "  %-20s %12.6f  %12.6f  %7s   %d/%d\n", to_string(row.op_class),
                  row.predicted_s, row.measured_s,
                  ratio_text(row.predicted_s, row.measured_s, "%.3f").c_str(), row.predicted_events,
                  row.measured_events);
    out << line;
  }
  out << "\n  device   compute busy: predicted_s    measured_s    ratio\n";
  for (const DeviceBusy& d : c.devices) {
    std::snprintf(line, sizeof line, "  %-6d                %12.6f  %12.6f  %7s\n", d.device,
                  d.predicted_compute_s, d.measured_compute_s,
                  ratio_text(d.predicted_compute_s, d.measured_compute_s, "%.3f").c_str());
    out << line;
  }
  return out.str();
}

std::string format_comparison_json(const TimelineComparison& c) {
  std::ostringstream out;
  out << "{\"predicted_step_s\": " << format_number(c.predicted_step_s)
      << ", \"measured_step_s\": " << format_number(c.measured_step_s)
      << ", \"step_ratio\": " << ratio_json(c.predicted_step_s, c.measured_step_s) << ",\n    \"classes\": [";
  for (std::size_t i = 0; i < c.classes.size(); ++i) {
    const ClassTimes& row = c.classes[i];
    out << (i ? "," : "") << "\n      {\"class\": " << plan::json_quote(to_string(row.op_class))
        << ", \"predicted_s\": " << format_number(row.predicted_s)
        << ", \"measured_s\": " << format_number(row.measured_s)
        << ", \"ratio\": " << ratio_json(row.predicted_s, row.measured_s)
        << ", \"predicted_events\": " << row.predicted_events
        << ", \"measured_events\": " << row.measured_events << "}";
  }
  out << "\n    ],\n    \"devices\": [";
  for (std::size_t i = 0; i < c.devices.size(); ++i) {
    const DeviceBusy& d = c.devices[i];
    out << (i ? "," : "") << "\n      {\"id\": " << d.device
        << ", \"predicted_compute_s\": " << format_number(d.predicted_compute_s)
        << ", \"measured_compute_s\": " << format_number(d.measured_compute_s)
        << ", \"ratio\": " << ratio_json(d.predicted_compute_s, d.measured_compute_s) << "}";
  }
  out << "\n    ]}";
  return out.str();
}

}  // namespace whale::sim

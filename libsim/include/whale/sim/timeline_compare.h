// File: timeline_compare.h
// A predicted timeline (whale-sim) held against a measured one (whale-run's --trace) of the
// same plan: seconds per op class summed over devices, each timeline's step time, and each
// device's compute-lane busy time. Rendered as a text table and as a JSON object.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/timeline.h"
#include "whale/plan/units.h"
#include "whale/sim/op_class.h"

namespace whale::sim {

struct ClassTimes {
  OpClass op_class = OpClass::other;
  Seconds predicted_s = 0;  // summed durations over all devices
  Seconds measured_s = 0;
  int predicted_events = 0;
  int measured_events = 0;
};

struct DeviceBusy {
  int device = 0;
  Seconds predicted_compute_s = 0;  // summed durations on the "compute" lane
  Seconds measured_compute_s = 0;
};

struct TimelineComparison {
  Seconds predicted_step_s = 0;  // makespan: latest end minus earliest start
  Seconds measured_step_s = 0;
  std::vector<ClassTimes> classes;  // the classes either timeline has, in all_op_classes() order
  std::vector<DeviceBusy> devices;  // the devices asked for, in that order
};

/// Compares two timelines of a plan, listing the compute-lane busy time of `devices` (the
/// plan's devices, say; the class sums count every event). Both timelines classify "B" passes
/// as backward_input when either has weight passes, so their rows line up.
TimelineComparison compare_timelines(const std::vector<plan::TimelineEvent>& predicted,
                                     const std::vector<plan::TimelineEvent>& measured,
                                     const std::vector<int>& devices);

/// The earliest start of any event (0 for none): where a timeline's step begins.
Seconds timeline_start(const std::vector<plan::TimelineEvent>& events);

/// predicted / measured; 0 when measured is 0 (the formats print that as "-" and null).
double time_ratio(Seconds predicted_s, Seconds measured_s);

/// The comparison as text: the step times, one row per class (predicted s, measured s, ratio,
/// event counts), then one row per device (compute busy time). Ends with a newline.
std::string format_comparison_text(const TimelineComparison& comparison);
/// The comparison as one JSON object: {"predicted_step_s", "measured_step_s", "step_ratio",
/// "classes": [{"class", "predicted_s", "measured_s", "ratio", "predicted_events",
/// "measured_events"}], "devices": [{"id", "predicted_compute_s", "measured_compute_s",
/// "ratio"}]}, without a trailing newline; ratios are null where the measured time is 0.
std::string format_comparison_json(const TimelineComparison& comparison);

}  // namespace whale::sim

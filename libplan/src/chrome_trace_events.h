// File: chrome_trace_events.h
// The complete ("X") events of a PyTorch profiler Chrome trace, indexed by thread for the
// layer-time reader (torch_trace_layer_times.cpp). Private to libplan.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace whale::plan {

/// One CPU-side event (an op, a record_function range, a runtime call); times in microseconds.
struct TraceEvent {
  std::string name;
  std::string cat;
  std::string pid;
  std::string lane;             // "pid/tid": the thread it ran on
  double start_us = 0;
  double end_us = 0;
  long long sequence = -1;      // args "Sequence number": the autograd node of the op, -1 if none
  bool autograd_backward = false;  // args "Fwd thread id": run by the autograd engine
  long long correlation = -1;   // args "correlation": a runtime call that launched GPU work
  std::size_t index = 0;        // its place in the file's traceEvents
};

struct ChromeTrace {
  std::string path;
  /// CPU-side events sorted by (lane, start_us, longest first): an enclosing event comes
  /// before those it contains.
  std::vector<TraceEvent> events;
  /// Per lane, the [first, end) of its events in `events`.
  std::map<std::string, std::pair<std::size_t, std::size_t>> lanes;
  /// GPU kernel time (cat "kernel") by the correlation of the runtime call that launched it.
  std::map<long long, double> kernel_us_by_correlation;

  /// The events of `lane` that lie within [start_us, end_us], the bounds included.
  std::vector<const TraceEvent*> within(const std::string& lane, double start_us, double end_us) const;
  /// The time of the interval on `lane`: the kernels launched inside it when the trace has GPU
  /// kernels and some were launched there, else end_us - start_us.
  double measured_us(const std::string& lane, double start_us, double end_us) const;
};

/// Reads the trace at `path`. Throws whale::Error naming the file and the event
/// (traceEvents[12].dur) on a malformed one.
ChromeTrace load_chrome_trace(const std::string& path);

}  // namespace whale::plan

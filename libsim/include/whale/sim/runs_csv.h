// File: runs_csv.h
// The measured runs whale-calibrate fits: a CSV with the header
// `plan,step_time_s,peak_memory_gib,failed` (docs/calibrate.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "whale/plan/units.h"

namespace whale::sim {

struct MeasuredRun {
  std::string plan_path;                  // resolved against the CSV's folder
  std::string plan_field;                 // the plan path as the CSV writes it
  int line = 0;                           // the row's line in the CSV, from 1
  std::optional<Seconds> step_time_s;     // the measured step time; absent when not measured
  std::optional<Bytes> peak_memory_bytes; // the measured peak of the run's devices (CSV: GiB)
  bool failed = false;                    // the run ran out of memory
};

/// Loads the CSV at `path`. Blank lines and lines starting with '#' are skipped. Each row has
/// four fields: a plan path (relative to the CSV's folder unless absolute), a step time > 0 in
/// seconds or empty, a peak memory > 0 in GiB or empty, and `failed` (true, false or empty =
/// false). A failed row has no step time; every other row has a step time or a peak memory.
/// Throws whale::Error naming the file, the line and column of the field, what was expected
/// and a hint; also for a wrong header and for a file without rows.
std::vector<MeasuredRun> load_runs_csv(const std::string& path);

}  // namespace whale::sim

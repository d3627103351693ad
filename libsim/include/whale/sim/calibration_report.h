// File: calibration_report.h
// What whale-calibrate writes: the source line of each fitted profile, the text report, and
// the folder of profiles that whale-plan and whale-sim take with --profiles.
#pragma once

#include <string>
#include <vector>

#include "whale/sim/calibrate.h"

namespace whale::sim {

/// One line for a calibrated profile's `calibration.source`: the fitted parameters, the runs
/// (timed and memory), the residual and the leave-one-out error.
std::string calibration_source(const CalibrationResult& result, const std::vector<CalibrationRun>& runs);

/// The report: per timed run measured, uncalibrated, calibrated and leave-one-out step time;
/// per run with memory evidence the same for its peak (GiB) and a verdict (fits, out of memory
/// predicted not to fit, ...); then the fitted figures per device model and the errors.
std::string format_calibration_report(const CalibrationResult& result);

/// The step-time table of the report, its run column `width` wide.
std::string format_step_time_table(const CalibrationResult& result, int width);

/// The peak-memory table of the report, its run column `width` wide.
std::string format_memory_table(const MemoryFit& memory, int width);

/// Writes `out_dir` (created if needed): every profile of `profiles_dir` (every *.yaml, copied
/// as it is) and over them the calibrated profiles of `result`. Throws whale::Error naming the
/// folder when it cannot be written.
void write_calibrated_profiles(const CalibrationResult& result, const std::string& profiles_dir,
                               const std::string& out_dir);

}  // namespace whale::sim

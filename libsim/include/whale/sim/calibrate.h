// File: calibrate.h
// whale-calibrate's fit: per device model, a few calibration figures (plan::ProfileCalibration)
// fitted by bounded least squares on log step time over measured runs, with the leave-one-out
// error, and a memory reserve from measured peaks and failed runs (docs/calibrate.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/profile_calibration.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// One measured run, ready to fit: its plan, holding the profiles to calibrate.
struct CalibrationRun {
  std::string name;  // how reports name the run (the plan path as the CSV gives it)
  plan::Plan plan;
  std::optional<Seconds> step_time_s;
  std::optional<Bytes> peak_memory_bytes;
  bool failed = false;  // ran out of memory
};

/// A fitted figure of ProfileCalibration, by its YAML name, with its bounds (SI units) and
/// whether it is fitted in log space (the scales).
struct CalibrationParameter {
  std::string name;  // gemm_efficiency_scale, step_overhead_us, memory_op_time_scale, ...
  double low = 0;
  double high = 0;
  bool log_scale = false;
  double plan::ProfileCalibration::*field = nullptr;
};

/// Every parameter whale-calibrate can fit, in the order automatic fits take them:
/// gemm_efficiency_scale [0.25, 4], step_overhead_us [0, shortest measured step],
/// memory_op_time_scale [0.25, 4], kernel_overhead_us [0, 1000], layer_overhead_us [0, 1e5].
/// `shortest_step_s` bounds the step overhead.
std::vector<CalibrationParameter> calibration_parameters(Seconds shortest_step_s);

struct CalibrationOptions {
  /// Names of the parameters to fit; empty: the first k of calibration_parameters(), k from 1
  /// to max(1, min(5, (timed runs - 1) / device models)) (so the fit keeps a residual), the k
  /// whose fit has the least leave-one-out error (fewer parameters on a tie).
  std::vector<std::string> parameters;
  std::string runs_file = "runs";  // what errors about the runs name as their file
};

struct RunPrediction {
  std::string name;
  Seconds measured_s = 0;
  Seconds uncalibrated_s = 0;               // with the input profiles
  Seconds calibrated_s = 0;                 // with the fit on all timed runs
  std::optional<Seconds> leave_one_out_s;   // with the fit on all the other timed runs
};

struct CalibrationResult {
  std::vector<std::string> device_models;   // the calibrated models, sorted
  std::vector<std::string> fitted;          // names of the fitted parameters
  std::map<std::string, plan::ProfileCalibration> calibrations;  // by device model
  std::map<std::string, plan::DeviceProfile> profiles;  // the calibrated profiles, by model
  std::vector<RunPrediction> runs;          // the timed runs, in input order
  double rms_log_residual = 0;              // sqrt(mean (log predicted - log measured)^2)
  double uncalibrated_mape = 0;             // mean |predicted / measured - 1|, as a fraction
  double calibrated_mape = 0;
  std::optional<double> leave_one_out_mape; // absent with fewer than 2 timed runs
  int memory_runs = 0;                      // runs that set the memory reserve (peaks, failures)
};

/// Fits the calibration of every device model that the timed runs use. Throws whale::Error
/// when no run has a step time or a parameter name is unknown. Deterministic.
CalibrationResult calibrate(const std::vector<CalibrationRun>& runs,
                            const CalibrationOptions& options = {});

/// Step time of `plan` with `calibrations` (by device model) replacing its profiles'.
Seconds calibrated_step_time_s(plan::Plan plan,
                               const std::map<std::string, plan::ProfileCalibration>& calibrations);

}  // namespace whale::sim

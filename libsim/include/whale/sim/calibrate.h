// File: calibrate.h
// whale-calibrate's fit: per device model, a few calibration figures (plan::ProfileCalibration)
// fitted by bounded least squares on log step time over measured runs, with the leave-one-out
// error, and the memory figures fitted to measured peaks and failed runs (memory_fit.h;
// docs/calibrate.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/profile_calibration.h"
#include "whale/plan/units.h"
#include "whale/sim/memory_fit.h"

namespace whale::sim {

/// One measured run, ready to fit: its plan, holding the profiles to calibrate.
struct CalibrationRun {
  std::string name;  // how reports name the run (the plan path as the CSV gives it)
  int line = 0;      // the run's line in the runs file (0: not from a file), for errors
  plan::Plan plan;
  std::optional<Seconds> step_time_s;
  std::optional<Bytes> peak_memory_bytes;
  bool failed = false;  // ran out of memory
};

/// A fitted figure of ProfileCalibration, by its YAML name, with its bounds (SI units) and
/// whether it is fitted in log space (the scales).
struct CalibrationParameter {
  std::string name;  // gemm_efficiency_scale, step_overhead_us, link_bandwidth_scale:shm, ...
  double low = 0;
  double high = 0;
  bool log_scale = false;
  double plan::ProfileCalibration::*field = nullptr;
  /// A per-link-kind figure (link_bandwidth_scale:KIND, link_latency_us:KIND): the kind and the
  /// field of its plan::LinkCalibration; `field` is then null.
  std::string link_kind;
  double plan::LinkCalibration::*link_field = nullptr;
};

/// The value of `parameter` in `calibration` (SI units); a link figure of a kind that
/// `calibration` does not list reads as the default (and is added by the mutable overload).
double calibration_value(const plan::ProfileCalibration& calibration, const CalibrationParameter& parameter);
double& calibration_value(plan::ProfileCalibration& calibration, const CalibrationParameter& parameter);

/// The parameters by shape class: gemm_shape_scale:small, :medium, :large, each [0.25, 4] in
/// log, multiplying gemm_efficiency_scale for the GEMMs of that class only.
std::vector<CalibrationParameter> gemm_shape_parameters();
/// The parameters of link kind `kind`: link_bandwidth_scale:KIND [0.05, 1.5] in log,
/// link_latency_us:KIND [0, 10000] us.
std::vector<CalibrationParameter> link_parameters(const std::string& kind);
/// Any parameter by name: calibration_parameters(shortest_step_s), gemm_shape_parameters() or
/// link_parameters(KIND) for a name ending in ":KIND"; nullopt for an unknown name.
std::optional<CalibrationParameter> calibration_parameter(const std::string& name, Seconds shortest_step_s);

/// Every parameter whale-calibrate can fit, in the order automatic fits take them:
/// gemm_efficiency_scale [0.25, 4], step_overhead_us [0, shortest measured step],
/// memory_op_time_scale [0.25, 4], kernel_overhead_us [0, 1000], layer_overhead_us [0, 1e5].
/// `shortest_step_s` bounds the step overhead.
std::vector<CalibrationParameter> calibration_parameters(Seconds shortest_step_s);

struct CalibrationOptions {
  /// Names of the parameters to fit; empty: automatic. Only parameters that some timed run's
  /// step time depends on (a non-zero Jacobian column at the input figures) are candidates.
  /// With cap = max(1, (timed runs - 1) / device models) (so the fit keeps a residual), for
  /// each k from 1 to min(5, cap), the first k of calibration_parameters() (P), and P with
  /// gemm_efficiency_scale replaced by the shape-class scales (when the runs hold GEMMs of at
  /// least two classes), P plus link_bandwidth_scale of every link kind the runs exercise, and
  /// P plus both link figures of those kinds; of those with at most cap parameters, the one
  /// whose fit has the least leave-one-out error (fewer parameters on a tie, then that order).
  /// A named parameter that no run depends on, or one named twice, is an error.
  /// memory_reserve_gib may be named: it is not fitted by least squares but set from the
  /// runs' peaks and failures whenever they have some, named or not; named, it needs them.
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
  int memory_runs = 0;                      // runs with memory evidence (peaks, failures)
  /// The memory fit (memory_fit.h): its figures are in `calibrations` (activation_memory_scale,
  /// memory_reserve_bytes) and in the profiles (those and framework_memory's
  /// allocator_slack_fraction when fitted).
  MemoryFit memory;
  /// What the user should know about the fit, one sentence each: figures fitted at a bound
  /// of their range, more figures than timed runs, a calibrated error above the uncalibrated.
  std::vector<std::string> warnings;
};

/// Fits the calibration of every device model that the timed runs use, and the memory figures
/// of every model that a run with a measured peak or a failure uses. Without timed runs only
/// the memory is fitted. Throws whale::Error when no run has a step time or memory evidence, a
/// parameter name is unknown or repeated, a measured peak exceeds the memory of the run's
/// largest device, or the fitted memory reserve would leave a device no memory for tensors
/// (the calibrated profile would not load). Deterministic.
CalibrationResult calibrate(const std::vector<CalibrationRun>& runs,
                            const CalibrationOptions& options = {});

/// Step time of `plan` with `calibrations` (by device model) replacing its profiles'.
Seconds calibrated_step_time_s(plan::Plan plan,
                               const std::map<std::string, plan::ProfileCalibration>& calibrations);

}  // namespace whale::sim

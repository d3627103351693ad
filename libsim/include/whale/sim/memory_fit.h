// File: memory_fit.h
// whale-calibrate's memory fit: per device model, the activation-memory scale and the
// allocator's slack fraction fitted to measured peaks in both directions, runs that ran as
// constraints (predicted to fit), and runs that ran out of memory as constraints the other way
// (predicted not to fit, by the calibrated reserve); per run the measured, uncalibrated,
// calibrated and leave-one-out peaks (docs/calibrate.md, "Memory").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

struct CalibrationRun;

/// One device's memory in the terms the fit moves: its peak is
/// (fixed_tensor_bytes + scale x activation_bytes) x (1 + slack) + reserve_bytes + calibrated reserve.
struct DeviceMemoryTerms {
  std::string model;             // the device model
  Bytes fixed_tensor_bytes = 0;  // weights, gradients (and bucket copies), optimizer state
  Bytes activation_bytes = 0;    // at activation scale 1
  Bytes reserve_bytes = 0;       // framework_memory's fixed reserve
  Bytes capacity_bytes = 0;
};

/// Every device of `plan`, from the memory model (replica_memory) with every activation scale 1.
std::vector<DeviceMemoryTerms> device_memory_terms(const plan::Plan& plan);

/// The figures the fit sets, per device model.
struct MemoryFigures {
  double activation_scale = 1.0;   // calibration.activation_memory_scale
  double slack_fraction = 0;       // framework_memory.allocator_slack_fraction
  Bytes calibrated_reserve_bytes = 0;  // calibration.memory_reserve_gib
};
using MemoryFiguresByModel = std::map<std::string, MemoryFigures>;

/// A device's predicted peak under `figures` (its model's entry).
Bytes predicted_device_peak(const DeviceMemoryTerms& device, const MemoryFiguresByModel& figures);

/// Per run with memory evidence (a measured peak, or failed), its largest device peak.
struct MemoryRunPrediction {
  std::string name;
  std::optional<Bytes> measured_bytes;  // the measured peak; none for a failed run
  bool failed = false;                  // ran out of memory
  Bytes uncalibrated_bytes = 0;         // with the input profiles
  Bytes calibrated_bytes = 0;           // with the fit on all runs
  std::optional<Bytes> leave_one_out_bytes;  // with the fit on the other runs (measured runs)
  bool calibrated_fits = true;          // every device within its capacity under the fit
};

struct MemoryFit {
  MemoryFiguresByModel figures;         // the fitted figures of every model with evidence
  std::vector<std::string> fitted;      // activation_memory_scale, allocator_slack_fraction
  std::vector<MemoryRunPrediction> runs;
  double uncalibrated_mape = 0;         // over the measured peaks
  double calibrated_mape = 0;
  std::optional<double> leave_one_out_mape;  // with at least 2 measured peaks
};

/// Fits the memory figures of every device model that a run with memory evidence uses:
/// bounded least squares on log(predicted / measured peak), the largest device of each run,
/// over the activation scale ([0.1, 4], in log) and, with at least two measured peaks per model,
/// the slack fraction ([0, 1]), starting from the profiles' figures; a run that ran (a step
/// time or a peak) must be predicted to fit (a hinge residual 10 x log(peak / capacity) above
/// capacity). Then each failed run that the fit still fits raises the calibrated reserve of its
/// models until its fullest device is 1 MiB over capacity (the reserve starts at 0). Empty when
/// no run has memory evidence. Deterministic.
MemoryFit fit_memory(const std::vector<CalibrationRun>& runs);

}  // namespace whale::sim

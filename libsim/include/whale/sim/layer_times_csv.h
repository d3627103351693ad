// File: layer_times_csv.h
// Measured per-layer times for whale-calibrate --layer-times: a CSV with the header
// plan::kLayerTimesCsvHeader, as whale-run --layer-times and
// frameworks' profilers write it (docs/calibrate.md, "Measured layer times").
#pragma once

#include <map>
#include <string>

#include "whale/plan/layer_times.h"
#include "whale/plan/plan.h"
#include "whale/sim/calibrate.h"

namespace whale::sim {

/// Measured layer times by device model.
using LayerTimesByModel = std::map<std::string, plan::LayerTimes>;

/// Loads the CSV at `path`. Blank lines and lines starting with '#' are skipped. Each row: a
/// device model with a profile `<profiles_dir>/<model>.yaml`, a layer kind (embedding,
/// transformer, head or custom), a tp degree (an integer >= 1), a micro-batch > 0 (samples one
/// device processes), a forward and a backward time > 0 (seconds); one row per (device_model,
/// layer_kind, tp, micro_batch). Each model's LayerTimes has `source` = `path`. Throws
/// whale::Error naming the file, the line and column of the field, what was expected and a
/// hint; also for a wrong header and for a file without rows.
LayerTimesByModel load_layer_times_csv(const std::string& path, const std::string& profiles_dir);

/// Gives every profile of `plan`'s cluster whose model `times` holds those layer times.
void apply_layer_times(const LayerTimesByModel& times, plan::Plan* plan);

/// Makes `result` write every model of `times` with its layer times: the calibrated profile where
/// there is one, else the profile `<profiles_dir>/<model>.yaml` as it is plus the layer times.
void add_layer_times_profiles(const LayerTimesByModel& times, const std::string& profiles_dir,
                              CalibrationResult* result);

}  // namespace whale::sim

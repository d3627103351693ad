// File: layer_times_file.h
// whale-calibrate --layer-times FILE: the measured layer times of a file in any of the formats
// whale reads, told apart by content (docs/layer-times.md).
#pragma once

#include <string>

#include "whale/sim/layer_times_csv.h"

namespace whale::sim {

enum class LayerTimesFormat {
  csv,                 // whale's CSV (plan::kLayerTimesCsvHeader), as whale-run --layer-times writes it
  layer_profile_json,  // micro-batch -> tp -> layer index -> [forward_s, backward_s] (Sailor)
  torch_trace,         // a PyTorch profiler Chrome trace
  megatron_log,        // a Megatron-LM training log with timer blocks
};

/// What a file may not say about the run it measured (whale-calibrate's --layer-times-* flags).
struct LayerTimesOptions {
  std::string device_model;  // the profile of the device that measured it; not for a CSV
  double micro_batch = 0;    // a torch trace's samples per device per micro-batch (> 0, required)
  int tp = 0;                // a torch trace's tensor-parallel degree (0: not given, then 1)
};

/// The format of the file at `path`, by its first characters: a JSON object with "traceEvents"
/// or a JSON array is a torch trace, another JSON object a per-layer profile, a text with
/// Megatron-LM's arguments block or timer headers a Megatron log, anything else a CSV (whose
/// reader then names what it expected). Throws whale::Error when the file cannot be read.
LayerTimesFormat detect_layer_times_format(const std::string& path);

/// Loads the measured layer times of the file at `path`, whatever its format. A CSV names its
/// device models on its rows (options.device_model must be empty); the other formats need
/// options.device_model, a model with a profile in `profiles_dir`. A torch trace needs
/// options.micro_batch (and takes options.tp); a Megatron log states both, so they must not be
/// given. Throws whale::Error naming the file or the flag.
LayerTimesByModel load_layer_times(const std::string& path, const LayerTimesOptions& options,
                                   const std::string& profiles_dir);

}  // namespace whale::sim

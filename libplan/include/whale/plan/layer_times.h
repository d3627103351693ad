// File: layer_times.h
// LayerTimes: measured forward and backward times of whole layers on one device model, carried
// by its profile (YAML: the optional `layer_times` block, docs/profile.md) and written there by
// whale-calibrate --layer-times. The simulator prices a measured layer shape by them instead of
// the GEMM curve (docs/calibrate.md, "Measured layer times").
#pragma once

#include <string>
#include <vector>

#include "whale/plan/units.h"

namespace whale::plan {

// model.h defines it; declared here so that device_profile.h need not include model.h.
enum class LayerKind;

/// The header of the CSV that whale-run --layer-times writes and whale-calibrate --layer-times
/// reads (docs/calibrate.md).
inline constexpr const char* kLayerTimesCsvHeader = "device_model,layer_kind,tp,micro_batch,forward_s,backward_s";

/// One measured layer shape: a layer of `kind` at tensor-parallel degree `tp` over
/// `micro_batch` samples (the samples one device processes in one micro-batch: its share).
struct MeasuredLayerTime {
  LayerKind kind{};  // model.h: embedding, transformer, head or custom
  int tp = 1;
  double micro_batch = 1;
  Seconds forward_s = 0;   // > 0: the layer's compute, tensor-parallel communication excluded
  Seconds backward_s = 0;  // > 0: likewise, recomputation excluded
};

struct LayerTimes {
  /// The file the measurements came from; empty when there are none.
  std::string source;
  /// At most one per (kind, tp, micro_batch); in the order they were read.
  std::vector<MeasuredLayerTime> measurements;

  bool empty() const { return measurements.empty(); }
  /// The measurements of (kind, tp), sorted by micro_batch.
  std::vector<MeasuredLayerTime> of_shape(LayerKind kind, int tp) const;
};

/// Reads a per-layer profile JSON keyed by micro-batch, tp degree and layer index, as Sailor's
/// planner stores its profiles (sailor_planner/profiles/<model>/<gpu>/profile.json):
///   {"<micro_batch>": {"<tp>": {"<layer index>": [forward_s, backward_s, ...]}}}
/// Layer 0 is the embedding, the last the head, those between transformer blocks (at least three
/// layers); a kind's times are the median over its layers (entries after the second, Sailor's
/// optimizer step, are ignored). Micro-batch > 0, tp an integer >= 1, indices 0..n-1, times
/// > 0 seconds. `source` is `path`. Throws whale::Error naming the file and the field.
LayerTimes load_layer_profile_json(const std::string& path);

}  // namespace whale::plan

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

}  // namespace whale::plan

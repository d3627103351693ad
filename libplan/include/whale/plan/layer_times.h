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
  /// The measured optimizer step per parameter a device updates (a Megatron-LM log's
  /// `optimizer` timer over the parameters of its rank), in seconds; 0 when not measured, and
  /// the simulator prices the step from memory bandwidth.
  Seconds optimizer_s_per_parameter = 0;

  bool empty() const { return measurements.empty(); }
  /// The measurements of (kind, tp), sorted by micro_batch.
  std::vector<MeasuredLayerTime> of_shape(LayerKind kind, int tp) const;
};

/// The median of `values` (the mean of the middle two for an even count); `values` is not empty.
Seconds median_seconds(std::vector<Seconds> values);

/// Adds the measurements of one (micro_batch, tp) from times indexed like a family model's
/// layers: index 0 the embedding, the last the head, those between transformer blocks (at least
/// three layers, forward_s and backward_s of equal size). A kind's times are the median over its
/// layers: the blocks of one model are the same shape, and the first often runs slower.
void add_indexed_layer_times(const std::vector<Seconds>& forward_s, const std::vector<Seconds>& backward_s,
                             double micro_batch, int tp, LayerTimes* out);

/// Reads a per-layer profile JSON keyed by micro-batch, tp degree and layer index, as Sailor's
/// planner stores its profiles (sailor_planner/profiles/<model>/<gpu>/profile.json):
///   {"<micro_batch>": {"<tp>": {"<layer index>": [forward_s, backward_s, ...]}}}
/// Layer 0 is the embedding, the last the head, those between transformer blocks (at least three
/// layers); a kind's times are the median over its layers (entries after the second, Sailor's
/// optimizer step, are ignored). Micro-batch > 0, tp an integer >= 1, indices 0..n-1, times
/// > 0 seconds. `source` is `path`. Throws whale::Error naming the file and the field.
LayerTimes load_layer_profile_json(const std::string& path);

}  // namespace whale::plan

// File: measured_layer_time.h
// How the simulator prices a layer whose shape its device profile measured (plan::LayerTimes):
// the rule that picks or derives the forward and backward time from the measurements
// (docs/calibrate.md, "Measured layer times"), and how many layers of a plan it applies to.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "whale/plan/layer_times.h"
#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

struct LayerTimePair {
  Seconds forward_s = 0;
  Seconds backward_s = 0;
};

/// The modelled (uncalibrated GEMM-curve) time of the layer at a micro-batch size.
using ModelledLayerTime = std::function<LayerTimePair(double micro_batch)>;

/// The modelled time of the layer at a tensor-parallel degree and a micro-batch size.
using ModelledLayerTimeAtTp = std::function<LayerTimePair(int tp, double micro_batch)>;

/// The time of one layer over `micro_batch` samples from `shape`, the measurements of its
/// (device model, layer kind, tp) sorted by micro_batch (LayerTimes::of_shape):
/// - none: nullopt (the curve prices the layer);
/// - a measurement at `micro_batch`: its forward and backward time;
/// - one measurement at m: modelled(micro_batch) x measured(m) / modelled(m), per direction;
/// - two or more: linear in micro_batch through the two measurements around it (inside their
///   range) or the two nearest (outside it: extrapolation). An extrapolated time <= 0 falls
///   back to the one-measurement rule with the nearest measurement.
/// Forward and backward follow the rule independently.
std::optional<LayerTimePair> measured_layer_time(const std::vector<plan::MeasuredLayerTime>& shape,
                                                 double micro_batch,
                                                 const ModelledLayerTime& modelled);

/// The time of a layer of `kind` at tensor-parallel degree `tp` over `micro_batch` samples from
/// `times`, its device model's measurements: the rule above on the measurements of (kind, tp),
/// except for the one-measurement rule when another degree tp' of the same kind has two or more
/// measurements. The measured line of tp' then gives the shape in place of the curve, at equal
/// work per rank (tp' over x tp'/tp samples does the work of tp over x):
///   time(micro_batch) = measured(m) x line'(micro_batch tp'/tp) / line'(m tp'/tp),
/// where line' is the rule above on tp''s measurements (the curve at tp' where it falls back).
/// Of several such degrees, the nearest in log2(tp') wins, the smaller on a tie. nullopt when
/// (kind, tp) has no measurement.
std::optional<LayerTimePair> measured_layer_time(const plan::LayerTimes& times, plan::LayerKind kind,
                                                 int tp, double micro_batch,
                                                 const ModelledLayerTimeAtTp& modelled);

/// Layers that the simulator prices from measurements in `plan`, counted once per replica of
/// each stage (a layer of a stage with dp replicas counts dp times); `total`, when given,
/// receives the count of all such (replica, layer) pairs.
int measured_layer_count(const plan::Plan& plan, int* total = nullptr);

}  // namespace whale::sim

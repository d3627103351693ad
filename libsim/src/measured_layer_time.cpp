// File: measured_layer_time.cpp
// The measured-layer-time rule and count (measured_layer_time.h).
#include "whale/sim/measured_layer_time.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>

namespace whale::sim {
namespace {

/// One direction (forward or backward) of a measurement.
using Direction = Seconds plan::MeasuredLayerTime::*;

/// The one-measurement rule: the modelled time at `micro_batch` scaled by measured / modelled
/// at the measurement's own micro-batch.
Seconds scaled_by_ratio(const plan::MeasuredLayerTime& m, Direction d, Seconds LayerTimePair::*part,
                        double micro_batch, const ModelledLayerTime& modelled) {
  const Seconds modelled_there = modelled(m.micro_batch).*part;
  if (modelled_there <= 0) return m.*d;  // nothing modelled to scale: the measured time as is
  return modelled(micro_batch).*part * (m.*d / modelled_there);
}

/// The rule for two or more measurements in one direction.
Seconds interpolated(const std::vector<plan::MeasuredLayerTime>& shape, Direction d,
                     Seconds LayerTimePair::*part, double micro_batch,
                     const ModelledLayerTime& modelled) {
  std::size_t upper = 1;  // the segment [upper - 1, upper]
  while (upper + 1 < shape.size() && shape[upper].micro_batch < micro_batch) ++upper;
  const plan::MeasuredLayerTime& a = shape[upper - 1];
  const plan::MeasuredLayerTime& b = shape[upper];
  const Seconds t = a.*d + (b.*d - a.*d) * (micro_batch - a.micro_batch) / (b.micro_batch - a.micro_batch);
  if (t > 0) return t;
  const plan::MeasuredLayerTime& nearest = micro_batch < a.micro_batch ? a : b;
  return scaled_by_ratio(nearest, d, part, micro_batch, modelled);
}

}  // namespace

std::optional<LayerTimePair> measured_layer_time(const std::vector<plan::MeasuredLayerTime>& shape,
                                                 double micro_batch,
                                                 const ModelledLayerTime& modelled) {
  if (shape.empty()) return std::nullopt;
  for (const plan::MeasuredLayerTime& m : shape) {
    if (m.micro_batch == micro_batch) return LayerTimePair{m.forward_s, m.backward_s};
  }
  LayerTimePair out;
  if (shape.size() == 1) {
    out.forward_s = scaled_by_ratio(shape[0], &plan::MeasuredLayerTime::forward_s,
                                    &LayerTimePair::forward_s, micro_batch, modelled);
    out.backward_s = scaled_by_ratio(shape[0], &plan::MeasuredLayerTime::backward_s,
                                     &LayerTimePair::backward_s, micro_batch, modelled);
    return out;
  }
  out.forward_s = interpolated(shape, &plan::MeasuredLayerTime::forward_s, &LayerTimePair::forward_s,
                               micro_batch, modelled);
  out.backward_s = interpolated(shape, &plan::MeasuredLayerTime::backward_s,
                                &LayerTimePair::backward_s, micro_batch, modelled);
  return out;
}

std::optional<LayerTimePair> measured_layer_time(const plan::LayerTimes& times, plan::LayerKind kind,
                                                 int tp, double micro_batch,
                                                 const ModelledLayerTimeAtTp& modelled) {
  const std::vector<plan::MeasuredLayerTime> shape = times.of_shape(kind, tp);
  const auto curve_at = [&](int degree) {
    return ModelledLayerTime([&modelled, degree](double x) { return modelled(degree, x); });
  };
  if (shape.size() != 1) return measured_layer_time(shape, micro_batch, curve_at(tp));
  int reference_tp = 0;  // the nearest other degree with a measured line; 0: none
  for (const plan::MeasuredLayerTime& m : times.measurements) {
    if (m.kind != kind || m.tp == tp || times.of_shape(kind, m.tp).size() < 2) continue;
    const double distance = std::abs(std::log2(static_cast<double>(m.tp) / tp));
    const double best = std::abs(std::log2(static_cast<double>(reference_tp) / tp));
    if (reference_tp == 0 || distance < best || (distance == best && m.tp < reference_tp)) reference_tp = m.tp;
  }
  if (reference_tp == 0) return measured_layer_time(shape, micro_batch, curve_at(tp));
  const std::vector<plan::MeasuredLayerTime> line = times.of_shape(kind, reference_tp);
  const ModelledLayerTime reference_curve = curve_at(reference_tp);
  const double work_ratio = static_cast<double>(reference_tp) / tp;
  const ModelledLayerTime measured_shape = [&](double x) {
    return *measured_layer_time(line, x * work_ratio, reference_curve);
  };
  return measured_layer_time(shape, micro_batch, measured_shape);
}

int measured_layer_count(const plan::Plan& plan, int* total) {
  int measured = 0, all = 0;
  for (const plan::Stage& stage : plan.stages) {
    for (int r = 0; r < stage.dp(); ++r) {
      // A replica of several device models is priced at its slowest, by measured times only
      // where every model measured the layer's shape.
      const std::vector<const plan::DeviceProfile*> profiles = plan.cluster.distinct_profiles(stage.replica_devices(r));
      for (int l = stage.first_layer; l < stage.end_layer; ++l) {
        ++all;
        const bool every = std::all_of(profiles.begin(), profiles.end(), [&](const plan::DeviceProfile* p) {
          return !p->layer_times.of_shape(plan.model.layers.at(l).kind, stage.replica_tp(r)).empty();
        });
        if (every) ++measured;
      }
    }
  }
  if (total) *total = all;
  return measured;
}

}  // namespace whale::sim

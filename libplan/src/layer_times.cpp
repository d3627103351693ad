// File: layer_times.cpp
// LayerTimes' selection by layer shape, and the measurements of a model's indexed layers
// (layer_times.h).
#include "whale/plan/layer_times.h"

#include <algorithm>
#include <cstddef>

#include "whale/plan/model.h"

namespace whale::plan {

std::vector<MeasuredLayerTime> LayerTimes::of_shape(LayerKind kind, int tp) const {
  std::vector<MeasuredLayerTime> out;
  for (const MeasuredLayerTime& m : measurements) {
    if (m.kind == kind && m.tp == tp) out.push_back(m);
  }
  std::sort(out.begin(), out.end(), [](const MeasuredLayerTime& a, const MeasuredLayerTime& b) {
    return a.micro_batch < b.micro_batch;
  });
  return out;
}

Seconds median_seconds(std::vector<Seconds> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void add_indexed_layer_times(const std::vector<Seconds>& forward_s, const std::vector<Seconds>& backward_s,
                             double micro_batch, int tp, LayerTimes* out) {
  const auto n = static_cast<std::ptrdiff_t>(forward_s.size());
  const auto add = [&](LayerKind kind, std::ptrdiff_t first, std::ptrdiff_t end) {
    MeasuredLayerTime m;
    m.kind = kind;
    m.tp = tp;
    m.micro_batch = micro_batch;
    m.forward_s = median_seconds({forward_s.begin() + first, forward_s.begin() + end});
    m.backward_s = median_seconds({backward_s.begin() + first, backward_s.begin() + end});
    out->measurements.push_back(m);
  };
  add(LayerKind::embedding, 0, 1);
  add(LayerKind::transformer, 1, n - 1);
  add(LayerKind::head, n - 1, n);
}

}  // namespace whale::plan

// File: layer_times.cpp
// LayerTimes' selection by layer shape (layer_times.h).
#include "whale/plan/layer_times.h"

#include <algorithm>

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

}  // namespace whale::plan

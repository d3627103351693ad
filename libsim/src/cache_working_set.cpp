// File: cache_working_set.cpp
// How much of a device's op time runs warm: its working set against its last-level cache.
#include "whale/sim/cache_working_set.h"

#include <algorithm>

#include "whale/plan/gradient_buckets.h"
#include "whale/plan/model_state_bytes.h"
#include "whale/sim/memory_model.h"

namespace whale::sim {
namespace {

/// The replica of `stage` whose devices include `device`; -1 when none does.
int replica_holding(const plan::Stage& stage, int device) {
  for (int r = 0; r < stage.replicas(); ++r) {
    const std::vector<int> devices = stage.replica_devices(r);
    if (std::find(devices.begin(), devices.end(), device) != devices.end()) return r;
  }
  return -1;
}

}  // namespace

Bytes layer_weight_bytes(const plan::Plan& plan, const plan::Stage& whole, int replica, int l) {
  const plan::Layer& layer = plan.model.layers.at(l);
  if (layer.kind == plan::LayerKind::embedding) return 0;
  const plan::StateBytesPerParam state =
      plan::state_bytes_per_param(plan.precision, plan.model.training.optimizer, plan.framework_precision);
  return plan::parameters_per_device(layer, whole.as_replica(replica)) * (state.weights + state.gradients);
}

Bytes layer_pass_activation_bytes(const plan::Plan& plan, const plan::Stage& whole, int replica, int l) {
  const plan::Stage stage = whole.as_replica(replica);
  return kept_activation_bytes(plan.model.layers.at(l), stage.tp, plan::Recompute::none, stage.sequence_parallel) *
         stage.shares.at(replica);
}

double passes_in_flight(int peak_in_flight_pairs, int stages_in_group) {
  return std::max(1.0, static_cast<double>(peak_in_flight_pairs) / std::max(1, stages_in_group));
}

std::vector<double> layer_warm_fractions(const plan::Plan& plan, const plan::Stage& stage, int replica,
                                         double in_flight_passes) {
  const int device = stage.devices.at(stage.replica_offset(replica));
  const plan::CacheResidency& residency = plan.cluster.profile_of(device).cache;
  const Bytes cache = residency.cache_bytes_per_device;
  if (cache <= 0) return {};
  Bytes working_set = 0;
  for (const plan::Stage& other : plan.stages) {
    const int r = replica_holding(other, device);
    if (r < 0) continue;
    for (int l = other.first_layer; l < other.end_layer; ++l) {
      working_set += layer_weight_bytes(plan, other, r, l) + in_flight_passes * layer_pass_activation_bytes(plan, other, r, l);
    }
  }
  const double warm = residency.warm_fraction_by_working_set.empty()
                          ? warm_fraction(working_set, cache)
                          : residency.warm_fraction_by_working_set.at(working_set);
  return std::vector<double>(stage.end_layer - stage.first_layer, warm);
}

double warm_fraction(Bytes working_set, Bytes cache) {
  const Bytes all_warm = kAllWarmFromCacheFraction * cache, all_cold = kAllColdFromCacheFraction * cache;
  return std::clamp((all_cold - working_set) / (all_cold - all_warm), 0.0, 1.0);
}

}  // namespace whale::sim

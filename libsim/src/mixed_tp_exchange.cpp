// File: mixed_tp_exchange.cpp
// mixed_tp_exchange_s: the gradient all-reduces of a stage with replicas at different tp, one
// per finest shard, priced on the links between the devices that hold it.
#include "mixed_tp_exchange.h"

#include <algorithm>

#include "whale/plan/framework_precision.h"
#include "whale/sim/collective_cost.h"

namespace whale::sim {

Seconds mixed_tp_exchange_s(const plan::Plan& plan, const plan::Stage& stage, int first_layer,
                            int end_layer) {
  double split = 0, replicated = 0;  // parameters
  for (int l = first_layer; l < end_layer; ++l) {
    const plan::Layer& layer = plan.model.layers.at(l);
    split += layer.parameters - layer.parameters_replicated;
    replicated += layer.parameters_replicated;
  }
  const double bytes_per_gradient =
      plan::gradient_bytes_per_element(plan.precision, plan.framework_precision);
  const int pieces = stage.tp;
  std::vector<Seconds> piece_s;
  for (int j = 0; j < pieces; ++j) {
    piece_s.push_back(allreduce_s(plan.cluster, stage.piece_holders(j), split / pieces * bytes_per_gradient));
  }
  const Seconds replicated_s = allreduce_s(plan.cluster, stage.devices, replicated * bytes_per_gradient);
  Seconds slowest_s = 0;
  for (int r = 0; r < stage.replicas(); ++r) {
    const int held = pieces / stage.replica_tp(r);  // pieces per device of this replica
    for (int rank = 0; rank < stage.replica_tp(r); ++rank) {
      Seconds device_s = replicated_s;
      for (int j = rank * held; j < (rank + 1) * held; ++j) device_s += piece_s[j];
      slowest_s = std::max(slowest_s, device_s);
    }
  }
  return slowest_s;
}

}  // namespace whale::sim

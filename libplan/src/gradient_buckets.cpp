// File: gradient_buckets.cpp
// gradient_buckets: a stage's layers in reverse order, cut into buckets of at least
// gradient_bucket_mib (the last one excepted).
#include "whale/plan/gradient_buckets.h"

#include "whale/plan/framework_precision.h"
#include "whale/plan/moe_layer.h"

namespace whale::plan {

double parameters_per_device(const Layer& layer, int tp) {
  return (layer.parameters - layer.parameters_replicated) / tp + layer.parameters_replicated;
}

double routed_parameters_per_device(const Layer& layer, const Stage& stage, int ep_rank) {
  if (layer.experts <= 0) return 0.0;
  return expert_parameters_per_device(
      layer, stage, ep_rank >= 0 ? ep_rank : most_experts_rank(stage, static_cast<int>(layer.experts)));
}

double parameters_per_device(const Layer& layer, const Stage& stage, int ep_rank) {
  return (layer.parameters - layer.parameters_replicated - layer.expert_parameters) / stage.tp +
         layer.parameters_replicated + routed_parameters_per_device(layer, stage, ep_rank);
}

std::vector<GradientBucket> gradient_buckets(const Plan& plan, int stage) {
  const Stage& st = plan.stages.at(stage);
  const Bytes cap_bytes = plan.gradient_bucket_mib * 1024.0 * 1024.0;
  const double bytes_per_gradient = gradient_bytes_per_element(plan.precision, plan.framework_precision);
  std::vector<GradientBucket> buckets;
  GradientBucket open{st.end_layer, st.end_layer, 0, 0};
  for (int l = st.end_layer - 1; l >= st.first_layer; --l) {
    const Layer& layer = plan.model.layers.at(l);
    open.first_layer = l;
    open.bytes += parameters_per_device(layer, st) * bytes_per_gradient;
    open.expert_bytes += routed_parameters_per_device(layer, st) * bytes_per_gradient;
    if (open.bytes >= cap_bytes || l == st.first_layer) {
      buckets.push_back(open);
      open = GradientBucket{l, l, 0, 0};
    }
  }
  return buckets;
}

}  // namespace whale::plan

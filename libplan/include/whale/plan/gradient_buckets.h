// File: gradient_buckets.h
// Gradient buckets: how a stage's parameters are split for the data-parallel gradient
// reduction. The schedule program, the simulator and the runtime all take the buckets from here.
#pragma once

#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::plan {

/// One bucket of a stage: the layers [first_layer, end_layer), whose gradients one tp shard
/// holds in `bytes` (at gradient_bytes_per_element: the training precision or fp32), of which
/// `expert_bytes` are the routed experts' (0 on dense layers; at the ep rank holding the most).
struct GradientBucket {
  int first_layer = 0;
  int end_layer = 0;
  Bytes bytes = 0;
  Bytes expert_bytes = 0;
};

/// Parameters one tp shard holds of `layer`: the split part divided by tp plus the replicated.
double parameters_per_device(const Layer& layer, int tp);
/// Routed-expert parameters one device of `stage` at ep rank `ep_rank` holds of `layer`: its
/// experts divided by expert_tp (0 on a dense layer). `ep_rank` -1: the rank holding the most.
double routed_parameters_per_device(const Layer& layer, const Stage& stage, int ep_rank = -1);
/// Parameters one device of `stage` at ep rank `ep_rank` holds of `layer`: the dense split
/// part divided by tp, the replicated part, and its routed experts divided by expert_tp
/// (moe_layer.h, expert_parameters_per_device). `ep_rank` -1: the rank holding the most
/// experts (the figure gradient buckets are sized by).
double parameters_per_device(const Layer& layer, const Stage& stage, int ep_rank = -1);

/// Splits stage `stage` of `plan` into buckets in reverse layer order, the order in which the
/// backward produces gradients: bucket 0 holds the last layers. Walking from the stage's last
/// layer down, each layer joins the open bucket, and the bucket closes as soon as its bytes
/// reach plan.gradient_bucket_mib (DDP's rule: a bucket may exceed the cap by its last layer;
/// a layer is never split). The last bucket ends at the stage's first layer and may be smaller.
/// Every stage has at least one bucket; the buckets tile the stage's layers. Pure.
std::vector<GradientBucket> gradient_buckets(const Plan& plan, int stage);

}  // namespace whale::plan

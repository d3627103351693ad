// File: moe_layer.h
// What one device of a stage runs of a mixture-of-experts layer under the stage's expert layout
// (ep, expert_tp): the layer rewritten so that the tp-only cost rules (GEMM splits, memory
// ops, parameters_per_device, kept activations) give the expert parts' per-device figures.
// The simulator and the planner's estimate both price MoE layers through it.
#pragma once

#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

/// `layer` as a device of `stage` runs it (layer.experts > 0; a dense layer comes back as it
/// is). With E experts, top_k k, tp t, ep e and expert_tp x, a device runs E/e experts over
/// s k x e / (t E) rows each per sample, each expert's FFN split x ways, so that its expert
/// FLOPs are the layer's / t at any layout; `busiest` scales the routed rows, their memory
/// ops and kept activations by the load imbalance (the device that the step waits for).
/// Rewritten: each expert GemmOp (m, n, count: m e x / t, n / x, count / e, not tp-split),
/// each expert MemoryOp (bytes x imbalance when busiest), `parameters` and
/// `expert_parameters` (the experts at tp t count E_p t / (e x), so that
/// parameters_per_device gives dense / t + experts / (e x)), and activation_bytes_split, which
/// takes the experts' kept bytes as a tp-split figure (their input rows x-fold replicated).
Layer layer_at_expert_layout(const Layer& layer, const Stage& stage, bool busiest);

/// The routed experts' parameters one device of `stage` holds of `layer`:
/// expert_parameters / (ep x expert_tp).
double expert_parameters_per_device(const Layer& layer, const Stage& stage);

/// Bytes one all-to-all (dispatch or combine) sends from one device of `stage` in a forward of
/// `samples` samples: all_to_all_bytes x samples / tp, times the load imbalance when
/// `busiest` (the busiest receiver's side).
Bytes all_to_all_bytes_per_device(const Layer& layer, const Stage& stage, double samples, bool busiest);

}  // namespace whale::plan

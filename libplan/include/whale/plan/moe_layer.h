// File: moe_layer.h
// What one device of a stage runs of a mixture-of-experts layer under the stage's expert layout
// (ep, expert_tp): the layer rewritten so that the tp-only cost rules (GEMM splits, memory
// ops, parameters_per_device, kept activations) give the expert parts' per-device figures.
// The simulator and the planner's estimate both price MoE layers through it.
#pragma once

#include <vector>

#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

/// The share of the routed tokens the experts of ep rank `ep_rank` receive, relative to the
/// mean rank's: its experts held x ep / experts (1 for every rank under an even split).
double expert_load_share(const Stage& stage, int ep_rank, int experts);

/// Of the devices of `replica` (with tp > expert_tp they span several ep ranks), the ep rank
/// holding the most experts: the device that the replica's MoE layers wait for.
int busiest_ep_rank(const Stage& stage, int replica, int experts);

/// The ep rank of `stage` holding the most experts (the lowest such rank).
int most_experts_rank(const Stage& stage, int experts);

/// The shares of the replicas of the ep group of `replica`'s first device, in ep-rank order.
std::vector<int> expert_group_shares(const Stage& stage, int replica);

/// The tokens an expert of `replica`'s ep group receives, relative to what the replica's own
/// share would send it: the mean share of the group's members (each device of a replica
/// sends 1/tp of its share) over the replica's share. 1 when the members' shares are equal;
/// with Whale's uneven shares the slow member's experts still take the group's mean tokens.
double expert_token_scale(const Stage& stage, int replica);

/// `layer` as a device of `stage` at ep rank `ep_rank` runs it (layer.experts > 0; a dense
/// layer comes back as it is). With E experts, top_k k, tp t, ep e, expert_tp x, and c the
/// experts the rank holds (Stage::experts_held: E/e under an even split), a device runs c
/// experts over s k x e / (t E) rows each per sample (each expert its mean share of the ep
/// group's tokens), each expert's FFN split x ways, so that its expert FLOPs are the layer's
/// x c e / (t E); `busiest` scales the routed rows, their memory ops and kept activations by the
/// load imbalance (the device that the step waits for), and `token_scale` (expert_token_scale)
/// scales them by the ep group's tokens over the replica's own.
/// Rewritten: each expert GemmOp (m, n, count: m e x / t, n / x, count c / E, not tp-split),
/// each expert MemoryOp (bytes x c e / E, x imbalance when busiest), `parameters` and
/// `expert_parameters` (the experts at tp t count E_p t c / (E x), so that
/// parameters_per_device gives dense / t + experts c / (E x)), and activation_bytes_split,
/// which takes the experts' kept bytes (x c e / E) as a tp-split figure (their input rows
/// x-fold replicated).
Layer layer_at_expert_layout(const Layer& layer, const Stage& stage, bool busiest, int ep_rank,
                             double token_scale = 1.0);

/// The routed experts' parameters one device of `stage` at ep rank `ep_rank` holds of `layer`:
/// expert_parameters x experts_held / (experts x expert_tp).
double expert_parameters_per_device(const Layer& layer, const Stage& stage, int ep_rank);

/// Bytes one all-to-all (dispatch or combine) moves per device of `stage` in a forward of
/// `samples` samples (the ep group's mean share): all_to_all_bytes x samples / tp (what each
/// device sends); when `busiest`, what the busiest receiver takes: times the load imbalance and
/// times the largest expert_load_share of the group (the rank holding the most experts
/// receives their tokens), which bounds the collective.
Bytes all_to_all_bytes_per_device(const Layer& layer, const Stage& stage, double samples, bool busiest);

}  // namespace whale::plan

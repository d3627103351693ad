// File: cache_working_set.h
// Which part of a device's op time runs with its operands in the last-level cache: the weights
// and activations its layers touch against the cache its profile records (CacheResidency).
#pragma once

#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// Bytes of `layer`'s parameters and their gradients that one device of replica `replica` of
/// `stage` holds (the plan's precision, its tp shard; an embedding table 0: its gather touches
/// only the rows it reads, which are its output).
Bytes layer_weight_bytes(const plan::Plan& plan, const plan::Stage& stage, int replica, int layer);

/// Bytes of activations that one micro-batch's pass through `layer` writes on one device of
/// replica `replica` of `stage` (what the layer keeps without recomputation, at the replica's
/// samples and tp shard).
Bytes layer_pass_activation_bytes(const plan::Plan& plan, const plan::Stage& stage, int replica, int layer);

/// The warm fraction of each layer of replica `replica` of `stage` (index: layer - first_layer),
/// the same for all its layers: the device profile's measured cache.warm_fraction_by_working_set
/// at the device's working set W where it has one, else warm_fraction of W against its cache C
/// bytes (cache.cache_bytes_per_device). Empty when the profile has no cache block: every layer
/// cold, and nothing allocated on the search's hot path.
///
/// The profile's cold figures already find an op's input hot (the op before it has just
/// written it); what a training step finds warm or cold is the rest: the weights and their
/// gradients, used again one micro-batch later, and the activations a forward writes, read back
/// by its backward. Between those uses the device touches the other layers' weights and
/// gradients and the activations of every micro-batch in flight on it: `in_flight_passes`
/// passes through its layers (1 for a single stage or the last stage of a 1F1B pipeline; 2 on
/// the first of two 1F1B stages, whose backward of micro-batch k follows the forward of k + 1;
/// every micro-batch under GPipe). So the working set W is the weight bytes of every layer the
/// device holds in any stage of the plan (its pipeline chunks) plus `in_flight_passes` times
/// those layers' activations of one micro-batch (layer_pass_activation_bytes). A step walks W in
/// the same order every micro-batch: under least-recently-used replacement a cyclic walk longer
/// than the cache evicts each line before its next use. Pricing C / W of the ops warm instead
/// (hits spread evenly over W) made every fidelity plan 3.6 to 6.0 points faster than pricing
/// them cold, in each of four runs on two 2-vCPU EPYC VMs whose cold-priced predictions were
/// the closer (docs/fidelity.md).
std::vector<double> layer_warm_fractions(const plan::Plan& plan, const plan::Stage& stage, int replica,
                                         double in_flight_passes);

/// Where the profile has no walked curve (cache.warm_fraction_by_working_set): working sets up
/// to this fraction of the cache run all warm, and from kAllColdFromCacheFraction on all cold. A
/// step touches more than W counts (each op's output and scratch, the activation gradients, the
/// optimizer's states once a step) and the cache is no perfect LRU, so hits fall off well before
/// W reaches C. One rank, eight one-sample micro-batches, GPT blocks of widths
/// 64, 128 and 256 on a 2-vCPU EPYC VM (swept cache 14-20 MiB per device; docs/fidelity.md,
/// "How warm a working set runs", scripts/cache_warmth_grid.sh): at W/C 0.15-0.18 the measured
/// step matched the warm price (cold 11-17% slow), at 0.34-0.36 it lay 0.64-0.74 of the way from
/// cold to warm, at 0.48-0.60 between none of it and half, at 1 none; W just under C, the last
/// of two 1F1B stages, ran cold. Between the two bounds the fraction is linear in W, so that a
/// noisy measure of C moves a prediction by a little, never by the whole gap between warm and
/// cold. Fitted on one machine: another 2-vCPU EPYC VM ran W of 1-4 C about 0.8 warm, which is
/// why whale-profile now measures the curve (docs/fidelity.md, "The cache walk").
constexpr double kAllWarmFromCacheFraction = 0.2;
constexpr double kAllColdFromCacheFraction = 0.6;

/// The warm fraction of ops whose working set is `working_set` bytes against `cache` bytes of
/// last-level cache: 1 up to kAllWarmFromCacheFraction x cache, 0 from kAllColdFromCacheFraction
/// x cache on, linear between. `cache` > 0.
double warm_fraction(Bytes working_set, Bytes cache);

/// Passes through all of a device's layers in flight at once: the memory model's peak of
/// (stage, micro-batch) pairs in flight on its group (MemoryBreakdown::peak_in_flight) over the
/// group's stages (its pipeline chunks; one pass covers each once), at least 1.
double passes_in_flight(int peak_in_flight_pairs, int stages_in_group);

}  // namespace whale::sim

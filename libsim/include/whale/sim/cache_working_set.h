// File: cache_working_set.h
// Which part of a device's op time runs with its operands in the last-level cache: the weights
// its layers hold against the cache its profile records (CacheResidency).
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
/// for the device profile's cache C bytes (cache.cache_bytes_per_device). Empty when the profile
/// has no cache block: every layer cold, and nothing allocated on the search's hot path.
///
/// The profile's cold figures already find an op's input hot (the op before it has just
/// written it); what a training step finds warm or cold is the rest, the weights and their
/// gradients, used again one micro-batch later, with every other layer of the device in
/// between. Between two uses of a layer's weights the device touches the other layers' weights
/// and gradients and the activations a micro-batch's pass writes (and its backward reads back).
/// So the working set W is the weight bytes of every layer the device holds in any stage of
/// the plan (its pipeline chunks) plus each of those layers' activations of one micro-batch
/// (layer_pass_activation_bytes), and the layers are priced warm by C / W, at most 1: the part
/// of the working set the cache holds when uses spread evenly over it (a reuse distance of W).
/// A layer whose weights alone exceed C streams through the cache: it is priced cold (0) and
/// its weights do not count against the others (last-level caches insert lines that pass once
/// at low priority).
std::vector<double> layer_warm_fractions(const plan::Plan& plan, const plan::Stage& stage, int replica);

}  // namespace whale::sim

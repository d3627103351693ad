// File: mixed_tp_exchange.h
// The data-parallel gradient exchange of a stage whose replicas run at different tp degrees
// (plan::Stage::replica_tps). Private to libsim.
#pragma once

#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// The devices that hold finest shard `piece` (0 .. stage.tp - 1, stage.tp the largest replica
/// tp) of a mixed-tp stage's split parameters, one per replica: tp rank piece * t / tp of a
/// replica at tp t (the shards nest, so that rank holds the pieces [rank * tp / t,
/// (rank + 1) * tp / t)).
std::vector<int> piece_holders(const plan::Stage& stage, int piece);

/// The exchange of the gradients of layers [first_layer, end_layer) of mixed-tp stage `stage`,
/// as Sailor and HetHub model it: each finest shard of the split parameters (1 / tp of their
/// gradients) is all-reduced among the devices that hold it, and the replicated parameters
/// (layernorms, biases after a row-parallel GEMM) among all the stage's devices. A device runs
/// the all-reduces of its pieces one after the other, so it moves its own shard of the
/// gradients; the slowest device sets the time. Bytes at gradient_bytes_per_element.
Seconds mixed_tp_exchange_s(const plan::Plan& plan, const plan::Stage& stage, int first_layer,
                            int end_layer);

}  // namespace whale::sim

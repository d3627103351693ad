// File: mixed_tp_exchange.h
// The data-parallel gradient exchange of a stage whose replicas run at different tp degrees
// (plan::Stage::replica_tps). Private to libsim.
#pragma once

#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// The exchange of the gradients of layers [first_layer, end_layer) of mixed-tp stage `stage`,
/// as Sailor and HetHub model it and whale-run runs it (docs/run.md): each finest shard of the
/// split parameters (1 / tp of their gradients) is all-reduced among the devices that hold it
/// (plan::Stage::piece_holders), and the replicated parameters (layernorms, biases after a
/// row-parallel GEMM) among all the stage's devices. A device runs the all-reduces of its
/// pieces one after the other, so it moves its own shard of the gradients; the slowest device
/// sets the time. Bytes at gradient_bytes_per_element.
Seconds mixed_tp_exchange_s(const plan::Plan& plan, const plan::Stage& stage, int first_layer,
                            int end_layer);

}  // namespace whale::sim

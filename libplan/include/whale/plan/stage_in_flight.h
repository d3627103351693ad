// File: stage_in_flight.h
// How many micro-batches of activations the quick estimate charges each stage of a pipeline
// group under a schedule: the figure its memory rungs and bounds are sized by.
#pragma once

#include "whale/plan/plan.h"

namespace whale::plan {

/// Micro-batches of activations group g of p keeps per layer of each of its stages under
/// `schedule` with m micro-batches: GPipe m; 1F1B and zb-h1's input passes min(m, p - g);
/// the wave min(m, p), what every stage of a group holds at its peak but the last chunk's
/// (which holds fewer); interleaved 1F1B (p - g) + ceil((p - 1) / v), capped at m: Megatron-LM's
/// figure, the first group's peak spread over its v stages, below the later groups' peaks
/// (they hold up to (v - 1) p + 1 (stage, micro-batch) pairs at once; docs/plan.md, "Memory").
int in_flight_of(const Schedule& schedule, int p, int g, int m);

}  // namespace whale::plan

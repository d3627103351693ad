// File: search_mixed_tp.h
// Mixed tensor parallelism in the search (Sailor's heterogeneous replicas): variants of a laid
// out plan whose device groups that mix device models give each model its own tp degree, for
// the cost model to rank against the plan itself.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/plan/plan.h"

namespace whale::plan {

/// Variants of `plan` in which one device group that holds several device models runs each
/// model at its own tp (Stage::replica_tps). For every such group (in group order) and every
/// assignment of a degree to each of its models (powers of two dividing the model's heads and
/// kv_heads and the model's device count in the group, each replica inside one node; in the
/// order of the models' first devices, then degrees ascending, the first model's changing
/// slowest), except the assignments that give every model the same degree: the group's devices
/// are re-cut model by model (each model's devices in the plan's order) into replicas of its
/// degree, and the micro-batch is split over the replicas by their peak (device peak at the
/// effective GEMM precision x tp), at least one sample each, largest remainders first. Every
/// stage on the group changes alike and drops sequence parallelism and optimizer or gradient
/// sharding (validate_plan keeps them to uniform stages). None for a mixture-of-experts model,
/// or where the micro-batch has fewer samples than the replicas. At most `max_variants`, each
/// valid by validate_plan. Pure and deterministic.
std::vector<Plan> mixed_tp_variants(const Plan& plan, std::size_t max_variants);

}  // namespace whale::plan

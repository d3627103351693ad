// File: expert_counts.h
// Uneven expert counts for expert-parallel groups that mix device models (Stage::
// expert_counts): more experts on the devices that run the expert GEMMs faster. The planner
// proposes them next to the even split and lets the cost model pick.
#pragma once

#include <vector>

#include "whale/plan/cost_model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

/// `experts` split in proportion to `weights` (each > 0): each at least 1, summing exactly to
/// `experts` (the floors of the ideal shares, then the largest remainders get one more, or the
/// largest excesses one less; ties to the lower rank). Requires experts >= weights.size().
std::vector<int> proportional_counts(int experts, const std::vector<double>& weights);

/// The expert-GEMM speed (flop/s) of device `id` under `plan`: its peak in the plan's effective
/// GEMM precision times its profile's GEMM efficiency at the flops of one routed expert GEMM of
/// the model's first MoE layer as a device of stage `s` runs it (its rows at the stage's ep and
/// largest share). 0 on a dense model.
double expert_gemm_flops_per_s(const Plan& plan, int s, int id);

/// Counts for stage `s` of `plan` proportional to each ep rank's expert-GEMM speed (a rank's
/// slowest device across the expert-dp replicas and expert-tp ranks, which bounds it); empty
/// when the stage has ep 1, no ep group mixes device models, or the counts come out even.
std::vector<int> speed_proportional_expert_counts(const Plan& plan, int s);

/// Gives every stage of `plan` its speed_proportional_expert_counts where these are not empty
/// (stages sharing a device group get the same counts); returns whether any stage changed.
bool apply_speed_proportional_expert_counts(Plan& plan);

/// The planner's choice between the even split and the speed-proportional counts: `plan`
/// (fitting, its estimate `estimate` from `cost`) with apply_speed_proportional_expert_counts
/// is bounded and, if it fits in memory, evaluated; when it is faster, plan and estimate become
/// it and the result is true. Plans whose cost model rejects the counts (whale::Error) stay.
bool prefer_uneven_expert_counts(const CostModel& cost, Plan& plan, Estimate& estimate);

}  // namespace whale::plan

// File: schedule_order.h
// Private to libplan: the compute order of each device group (forwards and backwards of
// (stage, micro-batch)), from which schedule_program.cpp emits the instructions.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "whale/plan/plan.h"

namespace whale::plan::detail {

/// Which part of a backward a ComputeOp is: all of it, or one pass of a split backward
/// (zb-h1's B, the input gradient, and W, the weight gradient).
enum class BackwardPart { whole, input, weight };

/// One forward or backward (or backward part) of (stage, micro_batch).
struct ComputeOp {
  bool forward = true;
  int stage = 0;
  int micro_batch = 0;
  BackwardPart part = BackwardPart::whole;  // backwards only
};

/// The shape of a schedule, already checked: groups >= 1, chunks >= 1, micro_batches >= 1.
struct ScheduleShape {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int groups = 1;          // p
  int chunks = 1;          // v
  int micro_batches = 1;   // m
  int stages() const { return groups * chunks; }
};

/// Compute orders, index = group. Every (stage, micro_batch) of a group's stages appears once
/// as a forward and once as a whole backward, forward first; or, split, once as a forward, once
/// as a backward input part and once as a backward weight part, in this order.
using ComputeOrders = std::vector<std::vector<ComputeOp>>;

/// gpipe, 1f1b and interleaved-1f1b: a warm-up of forwards, then one forward and one backward
/// in turn, then the remaining backwards (Megatron-LM's order; gpipe's warm-up is everything).
ComputeOrders one_f_one_b_orders(const ScheduleShape& shape);
/// The same order of one group, op by op, without building it. With `skip_repeats`, the steady
/// state's rounds (a forward, then a backward) past its first 2 p v + p are left out in whole
/// periods of p v rounds, but for the last period or more: a period repeats the same stages in
/// the same order (interleaved_op's chunk follows k mod p v), so every running count over the
/// ops (in flight per stage, first backward of a stage, zb-h1's weight parts lagging by at most
/// p - 1) takes the same values, and reaches no new extreme, in the rounds left out.
void visit_one_f_one_b(const ScheduleShape& shape, int group, const std::function<void(const ComputeOp&)>& visit,
                       bool skip_repeats = false);
/// Group `group`'s k-th forward (or backward) in that order's lists (gpipe's backwards run in
/// reverse micro-batch order).
ComputeOp one_f_one_b_op(const ScheduleShape& shape, int group, int k, bool forward);

/// wave (Hanayo): the order each group runs when the step is played with unit costs over the
/// V placement, a ready backward first, else a ready forward, at most p micro-batches admitted
/// past stage 0 and not yet back. Any order so obtained is deadlock-free under any costs.
ComputeOrders wave_orders(const ScheduleShape& shape);
/// wave_orders(shape), remembered for the few shapes asked last and shared (thread-safe): the
/// simulator's memory walk and its program of one plan both need it, and a search prices many
/// plans of one shape. At thousands of micro-batches one play takes tens of milliseconds.
std::shared_ptr<const ComputeOrders> shared_wave_orders(const ScheduleShape& shape);

/// zb-h1 (Qi et al. 2024, ZB-H1): 1f1b's order with every backward split. Group g's k-th
/// backward becomes its input part, directly followed by the weight part of the (k-g)-th
/// backward when k >= g; the g weight parts left run at the end, filling the cool-down. Peak
/// in flight (forward to weight part) is p on every group, 1f1b's peak on group 0.
ComputeOrders zb_h1_orders(const ScheduleShape& shape);
/// The same order of one group, op by op, without building it; `skip_repeats` as
/// visit_one_f_one_b's.
void visit_zb_h1(const ScheduleShape& shape, int group, const std::function<void(const ComputeOp&)>& visit,
                 bool skip_repeats = false);

}  // namespace whale::plan::detail

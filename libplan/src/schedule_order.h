// File: schedule_order.h
// Private to libplan: the compute order of each device group (forwards and backwards of
// (stage, micro-batch)), from which schedule_program.cpp emits the instructions.
#pragma once

#include <vector>

#include "whale/plan/plan.h"

namespace whale::plan::detail {

/// One forward or backward of (stage, micro_batch).
struct ComputeOp {
  bool forward = true;
  int stage = 0;
  int micro_batch = 0;
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
/// as a forward and once as a backward, forward first.
using ComputeOrders = std::vector<std::vector<ComputeOp>>;

/// gpipe, 1f1b and interleaved-1f1b: a warm-up of forwards, then one forward and one backward
/// in turn, then the remaining backwards (Megatron-LM's order; gpipe's warm-up is everything).
ComputeOrders one_f_one_b_orders(const ScheduleShape& shape);

/// wave (Hanayo): the order each group runs when the step is played with unit costs over the
/// V placement, a ready backward first, else a ready forward, at most p micro-batches admitted
/// past stage 0 and not yet back. Any order so obtained is deadlock-free under any costs.
ComputeOrders wave_orders(const ScheduleShape& shape);

}  // namespace whale::plan::detail

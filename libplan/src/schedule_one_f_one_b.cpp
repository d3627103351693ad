// File: schedule_one_f_one_b.cpp
// Compute orders of gpipe, 1f1b (PipeDream-flush) and Megatron-LM's interleaved 1F1B: each is
// a k-th forward, a k-th backward and a warm-up count, merged by one rule (zb-h1 splits the
// backwards of 1f1b's order: schedule_zero_bubble.cpp).
#include <algorithm>

#include "schedule_order.h"

namespace whale::plan::detail {
namespace {

/// Megatron's k-th forward (or backward) of a group under interleaving: micro-batches go in
/// runs of p; within a run, chunk 0 .. v-1 for forwards and v-1 .. 0 for backwards.
ComputeOp interleaved_op(const ScheduleShape& shape, int group, int k, bool forward) {
  const int p = shape.groups;
  const int v = shape.chunks;
  const int in_run = k % (p * v);
  int chunk = in_run / p;
  if (!forward) chunk = v - 1 - chunk;
  const int micro_batch = (k / (p * v)) * p + k % p;
  return ComputeOp{forward, chunk * p + group, micro_batch};
}

}  // namespace

ComputeOp one_f_one_b_op(const ScheduleShape& shape, int group, int k, bool forward) {
  if (shape.kind == ScheduleKind::interleaved_1f1b) return interleaved_op(shape, group, k, forward);
  if (forward) return ComputeOp{true, group, k};
  return ComputeOp{false, group, shape.kind == ScheduleKind::gpipe ? shape.micro_batches - 1 - k : k};
}

void visit_one_f_one_b(const ScheduleShape& shape, int group, const std::function<void(const ComputeOp&)>& visit,
                       bool skip_repeats) {
  const int p = shape.groups;
  const int total = shape.chunks * shape.micro_batches;
  int warmup = total;  // gpipe
  if (shape.kind == ScheduleKind::one_f_one_b || shape.kind == ScheduleKind::zb_h1) {
    warmup = p - group - 1;
  }
  if (shape.kind == ScheduleKind::interleaved_1f1b) {
    warmup = (p - group - 1) * 2 + (shape.chunks - 1) * p;
  }
  // The first `warmup` forwards, then one forward and one backward in turn while forwards
  // remain, then the remaining backwards.
  const int n_warmup = std::min(total, std::max(warmup, 0));
  for (int f = 0; f < n_warmup; ++f) visit(one_f_one_b_op(shape, group, f, true));
  int next_backward = 0;
  const int period = shape.chunks * p;
  const int kept_first = 2 * period + p;
  const int steady = total - n_warmup;
  const int skipped =
      skip_repeats && steady > kept_first + 2 * period ? (steady - kept_first - period) / period * period : 0;
  for (int f = n_warmup; f < total; ++f) {
    if (skipped > 0 && f == n_warmup + kept_first) {
      f += skipped;
      next_backward += skipped;
    }
    visit(one_f_one_b_op(shape, group, f, true));
    visit(one_f_one_b_op(shape, group, next_backward++, false));
  }
  for (; next_backward < total; ++next_backward) visit(one_f_one_b_op(shape, group, next_backward, false));
}

ComputeOrders one_f_one_b_orders(const ScheduleShape& shape) {
  ComputeOrders orders(shape.groups);
  for (int g = 0; g < shape.groups; ++g) {
    orders[g].reserve(2 * static_cast<std::size_t>(shape.chunks) * shape.micro_batches);
    visit_one_f_one_b(shape, g, [&](const ComputeOp& op) { orders[g].push_back(op); });
  }
  return orders;
}

}  // namespace whale::plan::detail

// File: schedule_one_f_one_b.cpp
// Compute orders of gpipe, 1f1b (PipeDream-flush) and Megatron-LM's interleaved 1F1B: each is
// a forward list, a backward list and a warm-up count, merged by one rule (zb-h1 splits the
// backwards of 1f1b's order: schedule_zero_bubble.cpp).
#include <algorithm>

#include "schedule_order.h"

namespace whale::plan::detail {
namespace {

/// The order of one group: the first `warmup` forwards, then one forward and one backward in
/// turn while forwards remain, then the remaining backwards.
std::vector<ComputeOp> merge_one_f_one_b(const std::vector<ComputeOp>& forwards,
                                         const std::vector<ComputeOp>& backwards, int warmup) {
  std::vector<ComputeOp> order;
  order.reserve(forwards.size() + backwards.size());
  const size_t n_warmup = std::min(forwards.size(), static_cast<size_t>(std::max(warmup, 0)));
  order.insert(order.end(), forwards.begin(), forwards.begin() + n_warmup);
  size_t next_backward = 0;
  for (size_t f = n_warmup; f < forwards.size(); ++f) {
    order.push_back(forwards[f]);
    order.push_back(backwards[next_backward++]);
  }
  order.insert(order.end(), backwards.begin() + next_backward, backwards.end());
  return order;
}

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

std::vector<ComputeOp> group_order(const ScheduleShape& shape, int group) {
  const int p = shape.groups;
  const int m = shape.micro_batches;
  const int total = shape.chunks * m;
  std::vector<ComputeOp> forwards;
  std::vector<ComputeOp> backwards;
  for (int k = 0; k < total; ++k) {
    if (shape.kind == ScheduleKind::interleaved_1f1b) {
      forwards.push_back(interleaved_op(shape, group, k, true));
      backwards.push_back(interleaved_op(shape, group, k, false));
    } else {
      forwards.push_back(ComputeOp{true, group, k});
      const int backward_mb = shape.kind == ScheduleKind::gpipe ? m - 1 - k : k;
      backwards.push_back(ComputeOp{false, group, backward_mb});
    }
  }
  int warmup = total;  // gpipe
  if (shape.kind == ScheduleKind::one_f_one_b || shape.kind == ScheduleKind::zb_h1) {
    warmup = p - group - 1;
  }
  if (shape.kind == ScheduleKind::interleaved_1f1b) {
    warmup = (p - group - 1) * 2 + (shape.chunks - 1) * p;
  }
  return merge_one_f_one_b(forwards, backwards, warmup);
}

}  // namespace

ComputeOrders one_f_one_b_orders(const ScheduleShape& shape) {
  ComputeOrders orders;
  for (int g = 0; g < shape.groups; ++g) orders.push_back(group_order(shape, g));
  return orders;
}

}  // namespace whale::plan::detail

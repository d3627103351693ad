// File: schedule_zero_bubble.cpp
// Compute order of ZB-H1 (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024,
// Section 2.1): 1f1b's forwards and input-gradient passes, the weight-gradient passes delayed.

#include "schedule_order.h"

namespace whale::plan::detail {
namespace {

/// The weight part of group g's k-th backward of 1f1b's order.
ComputeOp weight_part(const ScheduleShape& shape, int group, int k) {
  ComputeOp op = one_f_one_b_op(shape, group, k, false);
  op.part = BackwardPart::weight;
  return op;
}

}  // namespace

// Group g's order: its 1f1b order with each backward split into its input part and a weight
// part delayed by g backwards. Group g starts its first backward g steps of the pipeline
// later than group 0 would without the split, and leaves its last g weight parts for the
// cool-down bubble, so that every group's B passes run back to back down the pipeline.
void visit_zb_h1(const ScheduleShape& shape, int group, const std::function<void(const ComputeOp&)>& visit,
                 bool skip_repeats) {
  int inputs = 0, weights = 0;  // parts visited so far; the weights pending are backwards weights..inputs-1
  visit_one_f_one_b(shape, group, [&](const ComputeOp& op) {
    if (op.forward) {
      visit(op);
      return;
    }
    visit(ComputeOp{false, op.stage, op.micro_batch, BackwardPart::input});
    if (++inputs - weights > group) visit(weight_part(shape, group, weights++));
  }, skip_repeats);
  for (; weights < inputs; ++weights) visit(weight_part(shape, group, weights));
}

ComputeOrders zb_h1_orders(const ScheduleShape& shape) {
  ComputeOrders orders(shape.groups);
  for (int g = 0; g < shape.groups; ++g) {
    orders[g].reserve(3 * static_cast<std::size_t>(shape.micro_batches));
    visit_zb_h1(shape, g, [&](const ComputeOp& op) { orders[g].push_back(op); });
  }
  return orders;
}

}  // namespace whale::plan::detail

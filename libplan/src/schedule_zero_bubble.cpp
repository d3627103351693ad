// File: schedule_zero_bubble.cpp
// Compute order of ZB-H1 (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024,
// Section 2.1): 1f1b's forwards and input-gradient passes, the weight-gradient passes delayed.
#include <deque>

#include "schedule_order.h"

namespace whale::plan::detail {
namespace {

/// Group g's order: its 1f1b order with each backward split into its input part and a weight
/// part delayed by g backwards. Group g starts its first backward g steps of the pipeline
/// later than group 0 would without the split, and leaves its last g weight parts for the
/// cool-down bubble, so that every group's B passes run back to back down the pipeline.
std::vector<ComputeOp> split_backwards(const std::vector<ComputeOp>& one_f_one_b, int group) {
  std::vector<ComputeOp> order;
  order.reserve(one_f_one_b.size() * 3 / 2);
  std::deque<ComputeOp> pending_weights;
  for (const ComputeOp& op : one_f_one_b) {
    if (op.forward) {
      order.push_back(op);
      continue;
    }
    order.push_back(ComputeOp{false, op.stage, op.micro_batch, BackwardPart::input});
    pending_weights.push_back(ComputeOp{false, op.stage, op.micro_batch, BackwardPart::weight});
    if (static_cast<int>(pending_weights.size()) > group) {
      order.push_back(pending_weights.front());
      pending_weights.pop_front();
    }
  }
  order.insert(order.end(), pending_weights.begin(), pending_weights.end());
  return order;
}

}  // namespace

ComputeOrders zb_h1_orders(const ScheduleShape& shape) {
  ComputeOrders orders = one_f_one_b_orders(shape);
  for (int g = 0; g < shape.groups; ++g) orders[g] = split_backwards(orders[g], g);
  return orders;
}

}  // namespace whale::plan::detail

// File: schedule_wave.cpp
// Compute orders of Hanayo's wave schedule: the step is played once with unit costs over the
// V placement, and each group's order is the order in which it ran its work.
#include <algorithm>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "schedule_order.h"
#include "whale/plan/check.h"

namespace whale::plan::detail {
namespace {

// Costs of the play that fixes the order, in time units. Equal costs give the textbook
// interleaved bubble (p-1)/(v*m + p-1) when tf == tb; a play with backward = 2 forwards was
// tried and gave larger bubbles under both cost ratios.
constexpr int kForwardUnits = 1;
constexpr int kBackwardUnits = 1;
constexpr int kNotDone = std::numeric_limits<int>::max();

/// The state of the play: when each (stage, micro-batch) forward and backward ends, and the
/// next micro-batch each stage will forward and backward (each stage keeps micro-batch order).
class WavePlay {
 public:
  explicit WavePlay(const ScheduleShape& shape)
      : shape_(shape),
        forward_end_(shape.stages(), std::vector<int>(shape.micro_batches, kNotDone)),
        backward_end_(shape.stages(), std::vector<int>(shape.micro_batches, kNotDone)),
        next_forward_(shape.stages(), 0),
        next_backward_(shape.stages(), 0) {}

  /// The op group `stages` should start at time t: the ready backward of the oldest
  /// micro-batch (latest stage on ties), else the ready forward of the oldest micro-batch
  /// (latest stage on ties). Returns false when nothing is ready.
  bool pick(const std::vector<int>& stages, int t, ComputeOp* op) const {
    for (bool forward : {false, true}) {
      bool found = false;
      for (int s : stages) {
        const int mb = forward ? next_forward_[s] : next_backward_[s];
        if (mb >= shape_.micro_batches || !ready(forward, s, mb, t)) continue;
        if (!found || mb < op->micro_batch || (mb == op->micro_batch && s > op->stage)) {
          *op = ComputeOp{forward, s, mb};
          found = true;
        }
      }
      if (found) return true;
    }
    return false;
  }

  /// Starts `op` at time t; returns its end time.
  int start(const ComputeOp& op, int t) {
    const int end = t + (op.forward ? kForwardUnits : kBackwardUnits);
    (op.forward ? forward_end_ : backward_end_)[op.stage][op.micro_batch] = end;
    ++(op.forward ? next_forward_ : next_backward_)[op.stage];
    return end;
  }

 private:
  bool ready(bool forward, int s, int mb, int t) const {
    if (forward) {
      if (s > 0) return forward_end_[s - 1][mb] <= t;
      return mb < backwards_done_at_first_stage(t) + shape_.groups;  // admission
    }
    if (forward_end_[s][mb] > t) return false;
    return s == shape_.stages() - 1 || backward_end_[s + 1][mb] <= t;
  }

  // The micro-batches whose backward at stage 0 ended by t: a prefix, as stage 0 runs its
  // backwards in micro-batch order. t never decreases during the play and an end once set stays,
  // so the count resumes where the last call left it (O(m) over the play, not per call).
  int backwards_done_at_first_stage(int t) const {
    while (first_stage_done_ < shape_.micro_batches && backward_end_[0][first_stage_done_] <= t) ++first_stage_done_;
    return first_stage_done_;
  }

  ScheduleShape shape_;
  std::vector<std::vector<int>> forward_end_;
  std::vector<std::vector<int>> backward_end_;
  std::vector<int> next_forward_;
  std::vector<int> next_backward_;
  mutable int first_stage_done_ = 0;   // backwards_done_at_first_stage's count so far
};

}  // namespace

ComputeOrders wave_orders(const ScheduleShape& shape) {
  const int p = shape.groups;
  std::vector<std::vector<int>> stages_of_group(p);
  for (int s = 0; s < shape.stages(); ++s) {
    stages_of_group[group_of_stage(ScheduleKind::wave, p, shape.chunks, s)].push_back(s);
  }
  const size_t ops_per_group = 2 * static_cast<size_t>(shape.chunks) * shape.micro_batches;

  WavePlay play(shape);
  ComputeOrders orders(p);
  for (std::vector<ComputeOp>& order : orders) order.reserve(ops_per_group);
  std::vector<int> busy_until(p, 0);
  int t = 0;
  for (;;) {
    bool all_done = true;
    for (int g = 0; g < p; ++g) {
      if (orders[g].size() == ops_per_group) continue;
      all_done = false;
      ComputeOp op;
      if (busy_until[g] <= t && play.pick(stages_of_group[g], t, &op)) {
        busy_until[g] = play.start(op, t);
        orders[g].push_back(op);
      }
    }
    if (all_done) break;
    // Next time anything can change: the earliest end after t.
    int next = kNotDone;
    for (int g = 0; g < p; ++g) {
      if (busy_until[g] > t && busy_until[g] < next) next = busy_until[g];
    }
    // Cannot happen: when every group is idle, stage 0 of the oldest unadmitted micro-batch
    // or the backward of the oldest one in flight is ready.
    WHALE_CHECK(next != kNotDone, std::string("wave_orders: the play stalled"));
    t = next;
  }
  return orders;
}

std::shared_ptr<const ComputeOrders> shared_wave_orders(const ScheduleShape& shape) {
  // The shapes asked last, the latest first: a few, since one order of 16 groups x 4 chunks x
  // 16,384 micro-batches holds 33 MB.
  constexpr size_t kRemembered = 4;
  using Key = std::tuple<ScheduleKind, int, int, int>;
  static std::mutex mutex;
  static std::vector<std::pair<Key, std::shared_ptr<const ComputeOrders>>> recent;
  const Key key{shape.kind, shape.groups, shape.chunks, shape.micro_batches};
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t i = 0; i < recent.size(); ++i) {
    if (recent[i].first != key) continue;
    std::rotate(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(i),
                recent.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return recent.front().second;
  }
  auto orders = std::make_shared<const ComputeOrders>(wave_orders(shape));
  recent.insert(recent.begin(), {key, orders});
  if (recent.size() > kRemembered) recent.pop_back();
  return orders;
}

}  // namespace whale::plan::detail

// File: schedule_analysis.cpp
// analyze_schedule: a dependency-driven run of every group's program with unit costs, which
// checks validity, detects deadlock and measures busy time, bubbles and in-flight peaks.
#include "whale/plan/schedule_analysis.h"

#include <algorithm>
#include <string>

#include "whale/plan/error.h"

namespace whale::plan {
namespace {

std::string describe(const Instruction& in) {
  return std::string(to_string(in.kind)) + " stage " + std::to_string(in.stage) + " micro-batch " +
         std::to_string(in.micro_batch);
}

/// The state of one run. Step results: a group either runs its next instruction or waits on a
/// receive whose send has not run yet.
class ScheduleRun {
 public:
  ScheduleRun(const ScheduleProgram& program, const StageCosts& costs)
      : program_(program), costs_(costs) {
    index_stages();
    for (const auto* v : {&costs.forward_s, &costs.backward_s, &costs.optimizer_s, &costs.weight_s}) {
      if (v == &costs.weight_s && v->empty()) continue;  // no weight passes priced: free
      if (static_cast<int>(v->size()) < stages_) {
        throw Error("", "schedule", "a cost for each of the program's " + std::to_string(stages_) +
                                        " stages (got " + std::to_string(v->size()) + ")");
      }
    }
    const int groups = static_cast<int>(program.groups.size());
    pc_.assign(groups, 0);
    clock_s_.assign(groups, 0.0);
    result_.group_busy_s.assign(groups, 0.0);
    result_.peak_in_flight_per_group.assign(groups, 0);
    result_.peak_in_flight_per_stage.assign(stages_, 0);
    in_flight_stage_.assign(stages_, 0);
    in_flight_group_.assign(groups, 0);
    forward_done_.assign(stages_, std::vector<bool>(micro_batches_, false));
    backward_done_.assign(stages_, std::vector<bool>(micro_batches_, false));
    input_gradient_done_ = forward_done_;
    whole_backward_ = forward_done_;
    received_activation_ = forward_done_;
    received_gradient_ = forward_done_;
    backwards_left_.assign(stages_, micro_batches_);
    buckets_started_.assign(stages_, 0);
    waited_.assign(stages_, false);
    for (auto& sent : sent_s_) sent.assign(static_cast<size_t>(stages_) * micro_batches_, kNotSent);
  }

  ScheduleAnalysis run() {
    const int groups = static_cast<int>(program_.groups.size());
    for (bool progress = true; progress;) {
      progress = false;
      for (int g = 0; g < groups; ++g) {
        const auto& code = program_.groups[g].instructions;
        while (pc_[g] < code.size() && step(g, code[pc_[g]])) {
          ++pc_[g];
          progress = true;
        }
      }
    }
    check_finished();
    double busy_s = 0;
    for (int g = 0; g < groups; ++g) {
      result_.makespan_s = std::max(result_.makespan_s, clock_s_[g]);
      busy_s += result_.group_busy_s[g];
    }
    if (result_.makespan_s > 0) {
      result_.bubble_fraction = 1.0 - busy_s / (groups * result_.makespan_s);
    }
    return result_;
  }

 private:
  [[noreturn]] void fail(int g, const std::string& rule) const {
    const auto& in = program_.groups[g].instructions[pc_[g]];
    throw Error("", "schedule",
                "a valid program (group " + std::to_string(g) + " instruction " +
                    std::to_string(pc_[g]) + ", " + describe(in) + ": " + rule + ")");
  }

  void index_stages() {
    int stage_count = 0;
    for (const auto& gp : program_.groups) stage_count += static_cast<int>(gp.stages.size());
    stages_ = stage_count;
    owner_.assign(stages_, -1);
    for (size_t g = 0; g < program_.groups.size(); ++g) {
      for (int s : program_.groups[g].stages) {
        if (s < 0 || s >= stages_ || owner_[s] != -1) {
          throw Error("", "schedule",
                      "stages 0.." + std::to_string(stages_ - 1) + " each on one group (group " +
                          std::to_string(g) + " lists stage " + std::to_string(s) + ")");
        }
        owner_[s] = static_cast<int>(g);
      }
    }
    micro_batches_ = 0;
    for (const auto& gp : program_.groups) {
      for (const auto& in : gp.instructions)
        micro_batches_ = std::max(micro_batches_, in.micro_batch + 1);
    }
  }

  /// Runs instruction `in` of group g; returns false when it must wait; throws when invalid.
  bool step(int g, const Instruction& in) {
    using K = InstructionKind;
    const int s = in.stage;
    const bool per_micro_batch = in.kind != K::reduce_bucket && in.kind != K::wait_reductions &&
                                 in.kind != K::optimizer_step;
    if (s < 0 || s >= stages_ || owner_[s] != g) fail(g, "the stage is not one of the group's");
    if (per_micro_batch && in.micro_batch < 0) fail(g, "needs a micro-batch >= 0");
    if (!per_micro_batch && in.micro_batch != -1) fail(g, "takes micro-batch -1");
    const int mb = in.micro_batch;
    switch (in.kind) {
      case K::recv_activation:
      case K::recv_gradient:
        return receive(g, in);
      case K::send_activation:
        if (!forward_done_[s][mb]) fail(g, "sends before its forward");
        sent_s_[kActivation][slot(s, mb)] = clock_s_[g];
        return true;
      case K::send_gradient:
        if (!input_gradient_done_[s][mb]) fail(g, "sends before its backward");
        sent_s_[kGradient][slot(s, mb)] = clock_s_[g];
        return true;
      case K::forward:
        forward(g, s, mb);
        return true;
      case K::backward:
      case K::backward_input:
        backward_input(g, s, mb, in.kind == K::backward);
        return true;
      case K::backward_weight:
        if (backward_done_[s][mb] || !input_gradient_done_[s][mb] || whole_backward_[s][mb])
          fail(g, "a weight pass without its own backward_input before it");
        backward_weight(g, s, mb);
        return true;
      case K::reduce_bucket:
        if (backwards_left_[s] != 0) fail(g, "reduces before all backwards of the stage");
        if (waited_[s]) fail(g, "reduces after wait_reductions");
        if (in.bucket != buckets_started_[s])
          fail(g, "reduces bucket " + std::to_string(in.bucket) + " where bucket " +
                      std::to_string(buckets_started_[s]) + " comes next");
        ++buckets_started_[s];
        return true;
      case K::wait_reductions:
        if (buckets_started_[s] == 0) fail(g, "waits for reductions never started");
        waited_[s] = true;
        return true;
      case K::optimizer_step:
        if (backwards_left_[s] != 0) fail(g, "steps before all backwards of the stage");
        if (buckets_started_[s] > 0 && !waited_[s]) fail(g, "steps before wait_reductions");
        run_compute(g, costs_.optimizer_s[s]);
        return true;
    }
    return true;
  }

  bool receive(int g, const Instruction& in) {
    const bool activation = in.kind == InstructionKind::recv_activation;
    const int from_stage = activation ? in.stage - 1 : in.stage + 1;
    if (from_stage < 0 || from_stage >= stages_)
      fail(g, "has no neighbouring stage to receive from");
    Seconds& sent_s = sent_s_[activation ? kActivation : kGradient][slot(from_stage, in.micro_batch)];
    if (sent_s == kNotSent) return false;  // blocks until the send runs
    clock_s_[g] = std::max(clock_s_[g], sent_s);
    auto& received = activation ? received_activation_ : received_gradient_;
    received[in.stage][in.micro_batch] = true;
    sent_s = kNotSent;  // consumed: a second receive waits forever
    return true;
  }

  void run_compute(int g, Seconds duration_s) {
    clock_s_[g] += duration_s;
    result_.group_busy_s[g] += duration_s;
  }

  void forward(int g, int s, int mb) {
    if (forward_done_[s][mb]) fail(g, "a second forward");
    const bool has_input =
        s == 0 || (owner_[s - 1] == g ? forward_done_[s - 1][mb] : received_activation_[s][mb]);
    if (!has_input) fail(g, "runs before its input activation is here");
    forward_done_[s][mb] = true;
    run_compute(g, costs_.forward_s[s]);
    auto& peak_stage = result_.peak_in_flight_per_stage[s];
    auto& peak_group = result_.peak_in_flight_per_group[g];
    peak_stage = std::max(peak_stage, ++in_flight_stage_[s]);
    peak_group = std::max(peak_group, ++in_flight_group_[g]);
  }

  /// A backward, or the input part of a split one (`whole` false): needs stage+1's input
  /// gradient and produces this stage's.
  void backward_input(int g, int s, int mb, bool whole) {
    if (input_gradient_done_[s][mb]) fail(g, "a second backward");
    if (!forward_done_[s][mb]) fail(g, "runs before its forward");
    const bool has_gradient =
        s == stages_ - 1 ||
        (owner_[s + 1] == g ? input_gradient_done_[s + 1][mb] : received_gradient_[s][mb]);
    if (!has_gradient) fail(g, "runs before its output gradient is here");
    input_gradient_done_[s][mb] = true;
    whole_backward_[s][mb] = whole;
    run_compute(g, costs_.backward_s[s]);
    if (whole) backward_weight(g, s, mb);
  }

  /// The end of a backward: the micro-batch's parameter gradients are complete.
  void backward_weight(int g, int s, int mb) {
    backward_done_[s][mb] = true;
    --backwards_left_[s];
    run_compute(g, weight_s(s));
    --in_flight_stage_[s];
    --in_flight_group_[g];
  }

  /// The weight pass of stage s (none given: free).
  Seconds weight_s(int s) const { return costs_.weight_s.empty() ? 0.0 : costs_.weight_s[s]; }

  /// Every group ran to its end (else: deadlock) and every (stage, micro-batch) has its
  /// forward and backward.
  void check_finished() const {
    std::string blocked;
    for (size_t g = 0; g < program_.groups.size(); ++g) {
      const auto& code = program_.groups[g].instructions;
      if (pc_[g] == code.size()) continue;
      blocked += (blocked.empty() ? "" : ", ") + std::string("group ") + std::to_string(g) +
                 " waits at instruction " + std::to_string(pc_[g]) + " " + describe(code[pc_[g]]);
    }
    if (!blocked.empty()) {
      throw Error("", "schedule", "a deadlock-free program (" + blocked + ")",
                  "every receive needs a send that runs earlier in the step");
    }
    for (int s = 0; s < stages_; ++s) {
      for (int mb = 0; mb < micro_batches_; ++mb) {
        if (!backward_done_[s][mb]) {  // implies the forward may be missing too
          const char* lacks = !forward_done_[s][mb]          ? "its forward"
                              : input_gradient_done_[s][mb] ? "its backward_weight"
                                                            : "its backward";
          throw Error("", "schedule",
                      "a forward and a backward of every stage and micro-batch (stage " +
                          std::to_string(s) + " micro-batch " + std::to_string(mb) + " lacks " +
                          lacks + ")");
        }
      }
    }
  }

  const ScheduleProgram& program_;
  const StageCosts& costs_;
  int stages_ = 0;
  int micro_batches_ = 0;
  std::vector<int> owner_;        // index = stage: its group
  std::vector<size_t> pc_;        // index = group: next instruction
  std::vector<Seconds> clock_s_;  // index = group: when its next instruction may start
  // [stage][mb]: forward ran; backward (or backward_weight) ran; backward or backward_input
  // ran; that was a whole backward.
  std::vector<std::vector<bool>> forward_done_, backward_done_, input_gradient_done_,
      whole_backward_;
  std::vector<std::vector<bool>> received_activation_, received_gradient_;  // [stage][mb]
  static constexpr int kActivation = 0, kGradient = 1;
  static constexpr Seconds kNotSent = -1;
  size_t slot(int stage, int mb) const { return static_cast<size_t>(stage) * micro_batches_ + mb; }
  // [kActivation or kGradient][slot(from stage, mb)]: when the send ran, until received.
  std::vector<Seconds> sent_s_[2];
  std::vector<int> backwards_left_;                     // index = stage
  std::vector<int> buckets_started_;                    // index = stage: reduce_buckets so far
  std::vector<bool> waited_;                            // index = stage: wait_reductions ran
  std::vector<int> in_flight_stage_, in_flight_group_;
  ScheduleAnalysis result_;
};

}  // namespace

ScheduleAnalysis analyze_schedule(const ScheduleProgram& program, const StageCosts& costs) {
  return ScheduleRun(program, costs).run();
}

ScheduleAnalysis analyze_schedule(const ScheduleProgram& program, const UnitCosts& costs) {
  size_t stages = 0;
  for (const auto& gp : program.groups) stages += gp.stages.size();
  return analyze_schedule(program, StageCosts{std::vector<Seconds>(stages, costs.forward_s),
                                              std::vector<Seconds>(stages, costs.backward_s),
                                              std::vector<Seconds>(stages, 0.0),
                                              std::vector<Seconds>(stages, costs.weight_s)});
}

void check_schedule(const ScheduleProgram& program) { analyze_schedule(program, UnitCosts{}); }

}  // namespace whale::plan

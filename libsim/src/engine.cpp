// File: engine.cpp
// The discrete-event engine. Each replica unit runs its group's program in order; it blocks on
// a receive until every bridge transfer into it has landed, and on wait_reductions until every
// gradient bucket of its stage is reduced. Each stream serves its work in program order, so an op
// starts at the later of its dependencies and its stream becoming free.
#include "engine.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "alike_units.h"
#include "event_queue.h"
#include "whale/plan/check.h"

namespace whale::sim {

const char* to_string(Lane lane) {
  switch (lane) {
    case Lane::compute: return "compute";
    case Lane::tp: return "tp";
    case Lane::pp: return "pp";
    case Lane::dp: return "dp";
    case Lane::optimizer: return "optimizer";
  }
  return "compute";
}

namespace {

constexpr Seconds kUnknown = -1.0;
enum Direction { kActivation = 0, kGradient = 1 };
/// A backward instruction: a whole backward, or a split backward's input or weight pass.
enum class Part { whole, input, weight };

struct UnitState {
  std::size_t pc = 0;
  Seconds compute_free_s = 0;
  Seconds send_free_s = 0;
  int waiting_reduce_stage = -1;  // blocked on wait_reductions of this stage
};

class Engine {
 public:
  Engine(const plan::Plan& plan, const plan::ScheduleProgram& program, const CostTable& table,
         const UnitClasses& classes, double tp_overlap, bool record)
      : plan_(plan), program_(program), table_(table), classes_(classes), exposed_(1.0 - tp_overlap),
        record_(record), stages_(static_cast<int>(plan.stages.size())),
        micro_batches_(plan.micro_batches), replicas_(index_running_replicas(plan, program, classes, &running_index_)),
        queue_(static_cast<std::size_t>(stages_) * micro_batches_ * 2 * replicas_ + 64) {
    for (const plan::GroupProgram& g : program.groups) {
      result_.group_first_unit.push_back(static_cast<int>(result_.units.size()));
      const int dp = plan.stages.at(g.stages.front()).dp();
      running_in_group_.push_back(0);
      for (int r = 0; r < dp; ++r) {
        running_in_group_.back() += classes.runs(static_cast<int>(result_.units.size()));
        result_.units.push_back(UnitStats{g.group, r});
      }
    }
    units_.resize(result_.units.size());
    const std::size_t keys = static_cast<std::size_t>(stages_) * micro_batches_ * 2 * replicas_;
    pending_.assign(keys, 0);
    arrival_s_.assign(keys, 0);
    transfer_start_s_.assign(keys, 0);
    waiting_unit_.assign(keys, -1);
    for (int s = 0; s + 1 < stages_; ++s) {
      for (std::size_t i = 0; i < table.stages[s].to_next.size(); ++i) {
        for (int mb = 0; mb < micro_batches_; ++mb) {
          for (int to : classes.activation_receivers[s][i]) ++pending_[key(s + 1, mb, kActivation, to)];
          for (int to : classes.gradient_receivers[s][i]) ++pending_[key(s, mb, kGradient, to)];
        }
      }
    }
    const std::size_t slots = static_cast<std::size_t>(stages_) * replicas_;
    last_backward_start_s_.assign(slots, 0);
    last_backward_end_s_.assign(slots, 0);
    last_backward_split_.assign(slots, false);
    bucket_reached_.resize(stages_);
    for (int s = 0; s < stages_; ++s)
      bucket_reached_[s].assign(table.stages[s].bucket_allreduce_s.size(), 0);
    reduce_done_s_.assign(stages_, kUnknown);
    gradients_ready_s_.assign(stages_, 0);
    dp_free_s_.assign(program.groups.size(), 0);
  }

  EngineResult run() {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (classes_.runs(static_cast<int>(u))) queue_.push(0, EventKind::resume_unit, static_cast<int>(u));
    }
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      ++result_.events_processed;
      if (e.kind == EventKind::resume_unit) {
        run_unit(e.index);
      } else if (--pending_[e.index] == 0 && waiting_unit_[e.index] >= 0) {
        run_unit(waiting_unit_[e.index]);
      }
    }
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (!classes_.runs(static_cast<int>(u))) continue;
      const UnitStats& st = result_.units[u];
      WHALE_CHECK(units_[u].pc == program_.groups[st.group].instructions.size(),
                  "whale-sim engine: the program of group " + std::to_string(st.group) +
                      " deadlocked");
      result_.units[u].end_s = std::max(units_[u].compute_free_s, units_[u].send_free_s);
      result_.units[u].end_s = std::max(result_.units[u].end_s, dp_free_s_[st.group]);
      result_.step_time_s = std::max(result_.step_time_s, result_.units[u].end_s);
    }
    result_.simulated_units = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) result_.simulated_units += classes_.runs(static_cast<int>(u));
    // A unit that did not run takes its representative's figures, bit for bit (alike_units.h).
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const int rep = classes_.representative[u];
      if (rep == static_cast<int>(u)) continue;
      const UnitStats& own = result_.units[u];
      UnitStats copy = result_.units[rep];
      copy.group = own.group;
      copy.replica = own.replica;
      result_.units[u] = copy;
    }
    return std::move(result_);
  }

  /// Whether two transfers into one key landed at the same time with different starts: then
  /// the start kept (and the exposed wait) depends on the order the units ran in, which only
  /// a run of every unit reproduces.
  bool order_dependent() const { return order_dependent_; }

 private:
  /// Indexes the running replicas of each stage's group 0, 1, ... (running_index_, by stage and
  /// replica; -1 for a replica whose class's representative runs for it); returns the most of
  /// any group, the width of the engine's per-replica keys and slots. Only running units
  /// receive, send, or reach a slot, so a wide data-parallel group of alike replicas takes one.
  static int index_running_replicas(const plan::Plan& plan, const plan::ScheduleProgram& program,
                                    const UnitClasses& classes, std::vector<std::vector<int>>* index) {
    index->assign(plan.stages.size(), {});
    int most = 1;
    for (std::size_t g = 0; g < program.groups.size(); ++g) {
      const std::vector<int>& stages = program.groups[g].stages;
      const int dp = plan.stages.at(stages.front()).dp();
      std::vector<int> of_replica(dp, -1);
      int running = 0;
      for (int r = 0; r < dp; ++r) {
        if (classes.runs(classes.group_first_unit[g] + r)) of_replica[r] = running++;
      }
      most = std::max(most, running);
      for (int s : stages) (*index)[s] = of_replica;
    }
    return most;
  }

  std::size_t key(int stage, int mb, int direction, int replica) const {
    return ((static_cast<std::size_t>(stage) * micro_batches_ + mb) * 2 + direction) * replicas_ +
           running_index_[stage][replica];
  }
  /// The slot of a running replica of `stage` in the per-stage, per-replica vectors.
  std::size_t slot(int stage, int replica) const {
    return static_cast<std::size_t>(stage) * replicas_ + running_index_[stage][replica];
  }

  /// Executes unit u's instructions until it blocks or its program ends.
  void run_unit(int u) {
    UnitState& st = units_[u];
    const plan::GroupProgram& prog = program_.groups[result_.units[u].group];
    while (st.pc < prog.instructions.size()) {
      if (!execute(u, prog.instructions[st.pc])) return;
      ++st.pc;
      ++result_.events_processed;
    }
  }

  /// Executes one instruction; false when the unit must wait for something not yet known.
  bool execute(int u, const plan::Instruction& ins) {
    using K = plan::InstructionKind;
    switch (ins.kind) {
      case K::recv_activation: return receive(u, key(ins.stage, ins.micro_batch, kActivation,
                                                     result_.units[u].replica));
      case K::recv_gradient: return receive(u, key(ins.stage, ins.micro_batch, kGradient,
                                                   result_.units[u].replica));
      case K::forward: forward(u, ins); return true;
      case K::backward: backward(u, ins, Part::whole); return true;
      case K::backward_input: backward(u, ins, Part::input); return true;
      case K::backward_weight: backward(u, ins, Part::weight); return true;
      case K::send_activation: send(u, ins, kActivation); return true;
      case K::send_gradient: send(u, ins, kGradient); return true;
      case K::reduce_bucket: reduce_bucket(u, ins.stage, ins.bucket); return true;
      case K::wait_reductions: return wait_reductions(u, ins.stage);
      case K::optimizer_step: optimizer_step(u, ins.stage); return true;
    }
    return true;
  }

  bool receive(int u, std::size_t k) {
    if (pending_[k] > 0) {
      waiting_unit_[k] = u;
      return false;
    }
    UnitState& st = units_[u];
    const Seconds wait_s = arrival_s_[k] - st.compute_free_s;
    if (wait_s > 0) {
      result_.units[u].pp_exposed_s += std::min(wait_s, arrival_s_[k] - transfer_start_s_[k]);
      st.compute_free_s = arrival_s_[k];
    }
    return true;
  }

  /// Occupies the compute stream for `duration_s`; returns the start.
  Seconds occupy(int u, Seconds duration_s, char op, int stage, int mb) {
    UnitState& st = units_[u];
    const Seconds start_s = st.compute_free_s;
    st.compute_free_s += duration_s;
    record(u, op == 'O' ? Lane::optimizer : Lane::compute, op, stage, mb, start_s, duration_s);
    return start_s;
  }

  /// Runs op `op` of `ins` on unit u's compute stream: `compute_s` of compute followed by its
  /// tensor-parallel all-reduces (`tp_full_s`, of which the exposed_ share blocks the stream).
  /// Adds the compute to `*compute_total_s` and the tp times to the unit's stats; returns the
  /// op's start.
  Seconds compute_with_tp(int u, char op, const plan::Instruction& ins, Seconds compute_s,
                          Seconds tp_full_s, Seconds* compute_total_s) {
    UnitStats& stats = result_.units[u];
    const Seconds tp_s = tp_full_s * exposed_;
    const Seconds start_s = occupy(u, compute_s + tp_s, op, ins.stage, ins.micro_batch);
    record(u, Lane::tp, 'T', ins.stage, ins.micro_batch, start_s + compute_s, tp_s);
    *compute_total_s += compute_s;
    stats.tp_s += tp_full_s;
    stats.tp_exposed_s += tp_s;
    return start_s;
  }

  void forward(int u, const plan::Instruction& ins) {
    UnitStats& stats = result_.units[u];
    const ReplicaCost& c = table_.stages[ins.stage].replicas[stats.replica];
    compute_with_tp(u, 'F', ins, c.forward_s, c.tp_forward_s, &stats.compute_s);
    stats.model_flops += c.model_flops;
  }

  /// A whole backward, or one pass of a split one: the input pass recomputes (if the stage
  /// does) and runs everything but the weight-gradient GEMMs, with all the TP all-reduces; the
  /// weight pass runs those GEMMs. The whole backward or the weight pass completes the
  /// micro-batch's gradients, which the gradient buckets wait for.
  void backward(int u, const plan::Instruction& ins, Part part) {
    UnitStats& stats = result_.units[u];
    const ReplicaCost& c = table_.stages[ins.stage].replicas[stats.replica];
    Seconds start_s = 0;
    if (part == Part::weight) {
      start_s = compute_with_tp(u, 'W', ins, c.backward_weight_s, 0, &stats.compute_s);
    } else {
      if (c.recompute_s > 0) {
        compute_with_tp(u, 'R', ins, c.recompute_s, c.tp_recompute_s, &stats.recompute_s);
      }
      const Seconds compute_s =
          part == Part::input ? c.backward_s - c.backward_weight_s : c.backward_s;
      start_s = compute_with_tp(u, 'B', ins, compute_s, c.tp_backward_s, &stats.compute_s);
    }
    if (part == Part::input) return;
    const std::size_t at = slot(ins.stage, stats.replica);
    last_backward_start_s_[at] = start_s;
    last_backward_end_s_[at] = units_[u].compute_free_s;
    last_backward_split_[at] = part == Part::weight;
  }

  /// Sends of (stage, mb) from this unit: activations to stage+1, gradients to stage-1.
  void send(int u, const plan::Instruction& ins, int direction) {
    UnitState& st = units_[u];
    const int replica = result_.units[u].replica;
    const int boundary = direction == kActivation ? ins.stage : ins.stage - 1;
    const std::vector<TransferCost>& transfers = table_.stages[boundary].to_next;
    const std::vector<std::vector<int>>& receivers = direction == kActivation
                                                         ? classes_.activation_receivers[boundary]
                                                         : classes_.gradient_receivers[boundary];
    const int to_stage = direction == kActivation ? ins.stage + 1 : ins.stage - 1;
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const TransferCost& t = transfers[i];
      const int from = direction == kActivation ? t.from_replica : t.to_replica;
      if (from != replica) continue;
      const Seconds start_s = std::max(st.send_free_s, st.compute_free_s);
      st.send_free_s = start_s + t.time_s;
      result_.units[u].pp_s += t.time_s;
      record(u, Lane::pp, direction == kActivation ? 'A' : 'G', ins.stage, ins.micro_batch,
             start_s, t.time_s);
      for (int to : receivers[i]) land(key(to_stage, ins.micro_batch, direction, to), start_s, st.send_free_s);
    }
  }

  /// A transfer of [start_s, end_s) lands in key k: the key keeps its latest landing.
  void land(std::size_t k, Seconds start_s, Seconds end_s) {
    if (end_s >= arrival_s_[k]) {
      if (end_s == arrival_s_[k] && start_s != transfer_start_s_[k]) order_dependent_ = true;
      arrival_s_[k] = end_s;
      transfer_start_s_[k] = start_s;
    }
    queue_.push(end_s, EventKind::arrival, static_cast<int>(k));
  }

  /// Unit u reached reduce_bucket(stage, bucket) (schedule_program.h). The last replica to
  /// reach it schedules the bucket's all-reduce on the group's DP stream: it starts once every
  /// replica's last backward of the stage has passed the bucket's layers (that backward's start
  /// plus the compute and exposed TP time of buckets 0..bucket; for a split backward, its
  /// weight pass's start plus the weight GEMMs of buckets 0..bucket) and the stream is free.
  void reduce_bucket(int u, int stage, int bucket) {
    const int group = result_.units[u].group;
    const plan::Stage& st = plan_.stages[stage];
    if (++bucket_reached_[stage].at(bucket) < running_in_group_[group]) return;
    const StageCost& cost = table_.stages[stage];
    const int first_unit = result_.group_first_unit[group];
    Seconds ready_s = 0;
    for (int r = 0; r < st.dp(); ++r) {
      if (!classes_.runs(first_unit + r)) continue;
      const ReplicaCost& c = cost.replicas[r];
      const std::size_t at = slot(stage, r);
      Seconds passed_s = last_backward_start_s_[at];
      for (int b = 0; b <= bucket; ++b) {
        passed_s += last_backward_split_[at]
                        ? c.bucket_weight_s[b]
                        : c.bucket_backward_s[b] + exposed_ * c.bucket_tp_s[b];
      }
      ready_s = std::max(ready_s, std::min(passed_s, last_backward_end_s_[at]));
    }
    Seconds& dp_free_s = dp_free_s_[group];
    const Seconds start_s = std::max(dp_free_s, ready_s);
    const Seconds duration_s = cost.bucket_allreduce_s[bucket];
    dp_free_s = start_s + duration_s;
    for (int r = 0; r < st.dp(); ++r) {
      if (!classes_.runs(first_unit + r)) continue;
      result_.units[first_unit + r].dp_s += duration_s;
      record(first_unit + r, Lane::dp, 'D', stage, -1, start_s, duration_s, bucket);
    }
    if (bucket + 1 < static_cast<int>(cost.bucket_allreduce_s.size())) return;
    // The stage's last bucket: every bucket is scheduled, so the reduction's end is known.
    reduce_done_s_[stage] = dp_free_s;
    for (int r = 0; r < st.dp(); ++r) {
      if (!classes_.runs(first_unit + r)) continue;
      gradients_ready_s_[stage] = std::max(gradients_ready_s_[stage], last_backward_end_s_[slot(stage, r)]);
    }
    for (int r = 0; r < st.dp(); ++r) {
      const int unit = first_unit + r;
      if (classes_.runs(unit) && units_[unit].waiting_reduce_stage == stage) {
        units_[unit].waiting_reduce_stage = -1;
        queue_.push(reduce_done_s_[stage], EventKind::resume_unit, unit);
      }
    }
  }

  /// Blocks the compute stream until every bucket of `stage` is reduced; false while the end
  /// of the reduction is not known yet (a replica has not reached the last bucket).
  bool wait_reductions(int u, int stage) {
    UnitState& st = units_[u];
    if (reduce_done_s_[stage] == kUnknown) {
      st.waiting_reduce_stage = stage;
      return false;
    }
    UnitStats& stats = result_.units[u];
    if (reduce_done_s_[stage] > st.compute_free_s) {
      // Waiting for the slowest replica's backward is imbalance (idle); only the wait past
      // every replica's gradients is exposed communication.
      stats.dp_exposed_s +=
          reduce_done_s_[stage] - std::max(st.compute_free_s, gradients_ready_s_[stage]);
      st.compute_free_s = reduce_done_s_[stage];
    }
    return true;
  }

  void optimizer_step(int u, int stage) {
    UnitStats& stats = result_.units[u];
    // Tied embeddings: the first and last stages all-reduce the table's gradient first.
    exposed_dp(u, 'E', stage, table_.stages[stage].tied_embedding_s);
    const Seconds duration_s = table_.stages[stage].optimizer_s[stats.replica];
    occupy(u, duration_s, 'O', stage, -1);
    stats.compute_s += duration_s;
    // A sharded optimizer: the replicas all-gather their updated weights; nothing overlaps it.
    exposed_dp(u, 'Z', stage, table_.stages[stage].dp_gather_s);
  }

  /// A data-parallel collective that blocks the unit's compute stream (nothing overlaps it):
  /// counted as dp time, all of it exposed. Nothing when `duration_s` is 0.
  void exposed_dp(int u, char op, int stage, Seconds duration_s) {
    if (duration_s <= 0) return;
    UnitState& st = units_[u];
    UnitStats& stats = result_.units[u];
    record(u, Lane::dp, op, stage, -1, st.compute_free_s, duration_s);
    st.compute_free_s += duration_s;
    stats.dp_s += duration_s;
    stats.dp_exposed_s += duration_s;
  }

  void record(int u, Lane lane, char op, int stage, int mb, Seconds start_s, Seconds duration_s,
              int bucket = -1) {
    if (!record_ || duration_s <= 0) return;
    result_.events.push_back(UnitEvent{u, lane, op, stage, mb, bucket, start_s, duration_s});
  }

  const plan::Plan& plan_;
  const plan::ScheduleProgram& program_;
  const CostTable& table_;
  const UnitClasses& classes_;
  std::vector<int> running_in_group_;  // per group: its units that run (one per class)
  bool order_dependent_ = false;
  const double exposed_;  // share of TP time on the critical path
  const bool record_;
  std::vector<std::vector<int>> running_index_;   // by stage and replica (index_running_replicas)
  const int stages_, micro_batches_, replicas_;
  EventQueue queue_;
  EngineResult result_;
  std::vector<UnitState> units_;
  // Per arrival key (stage, micro-batch, direction, replica):
  std::vector<int> pending_;             // transfers not landed yet
  std::vector<Seconds> arrival_s_;       // latest landing so far
  std::vector<Seconds> transfer_start_s_;  // start of that latest transfer
  std::vector<int> waiting_unit_;        // unit blocked on it, -1 if none
  // Per (stage, replica): the last backward (or weight pass) so far, for gradient bucket
  // readiness, and whether it was a weight pass.
  std::vector<Seconds> last_backward_start_s_, last_backward_end_s_;
  std::vector<bool> last_backward_split_;
  std::vector<std::vector<int>> bucket_reached_;  // per stage and bucket: replicas there
  std::vector<Seconds> reduce_done_s_;   // per stage: end of its reduction, kUnknown before
  std::vector<Seconds> gradients_ready_s_;  // per stage: every replica's last backward ended
  std::vector<Seconds> dp_free_s_;       // per group: its DP stream frees up
};

}  // namespace

EngineResult run_engine(const plan::Plan& plan, const plan::ScheduleProgram& program,
                        const CostTable& table, double tp_overlap, bool record_events,
                        bool merge_alike_units) {
  if (merge_alike_units && !record_events) {
    const UnitClasses classes = alike_units(program, table);
    if (classes.classes < static_cast<int>(classes.representative.size())) {
      Engine merged(plan, program, table, classes, tp_overlap, false);
      EngineResult result = merged.run();
      if (!merged.order_dependent()) return result;
    }
  }
  const UnitClasses alone = each_unit_alone(program, table);
  return Engine(plan, program, table, alone, tp_overlap, record_events).run();
}

}  // namespace whale::sim

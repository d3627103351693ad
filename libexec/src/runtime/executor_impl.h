// File: executor_impl.h
// Private state of the Executor, shared by its files: executor.cpp (construction, the step
// loop, compute), executor_bridge.cpp (activations and gradients between groups) and
// executor_update.cpp (gradient buckets, AdamW, state and summaries).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "runtime/executor_optimizer.h"
#include "runtime/gradient_reducer.h"
#include "runtime/tied_embedding.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/runtime/loss_scaler.h"
#include "whale/exec/runtime/executor.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/schedule_program.h"

namespace whale::exec {

/// One stage this rank runs.
struct StageState {
  StageRole role;
  std::unique_ptr<StageModule> module;
  Communicator* tp = nullptr;   // tensor group (null when tp = 1)
  Communicator* dp = nullptr;   // data-parallel group of this tp rank (null when dp = 1)
  std::size_t input_floats = 0;    // per sample
  std::size_t output_floats = 0;   // per sample
  std::unique_ptr<StageOptimizer> optimizer;
  std::unique_ptr<GradientReducer> reducer;  // null when dp = 1
  /// With the experts laid out apart from attention: this rank's expert-parallel group, the
  /// ranks holding its experts and, with expert_tp above tp, its expert-token-gather group
  /// (rank_communicators.h, expert_layout_groups); null otherwise, or alone.
  std::unique_ptr<Communicator> ep, expert_dp, expert_gather;
  int last_backward_mb = -1;  // the backward (or weight pass) that reduce_bucket follows
};

/// Key of a per-micro-batch buffer: (stage, micro_batch).
using BufferKey = std::pair<int, int>;

struct Executor::Impl {
  const plan::Plan& plan;
  const RankLayout& layout;
  Communicator& world;
  PeerTransport& transport;
  ExecutorOptions options;
  int rank = 0;
  int device = 0;
  plan::GroupProgram program;
  std::unique_ptr<Backend> backend;  // this rank's one backend, shared by its stages
  std::map<std::vector<int>, std::unique_ptr<Communicator>> groups;  // by member world ranks
  std::map<int, StageState> stages;                                  // by stage index

  // Per-step buffers, filled and consumed by the instructions.
  std::map<BufferKey, std::vector<float>> inputs;        // activation entering the stage
  std::map<BufferKey, std::vector<float>> outputs;       // activation leaving the stage
  std::map<BufferKey, std::vector<float>> output_grads;  // gradient of the stage's output
  std::map<BufferKey, std::vector<float>> input_grads;   // gradient of the stage's input
  double loss_sum = 0;                                   // summed token cross-entropy here
  LossScaler scaler{plan.precision == plan::Precision::fp16};  // fp16 only; else scale 1
  /// Stages whose optimizer step waits for the end of the step: for fp16's overflow check and
  /// for the global gradient norm of clipping.
  std::vector<int> deferred_steps;
  double grad_norm = -1;  // of the last step, when options.clip_grad > 0
  /// The tied token table's group and this rank's copies (null unless the model ties its head to
  /// the table across stages and this rank holds one of the two or both); their stages; whether
  /// this step has summed them.
  std::unique_ptr<Communicator> tied_group;
  std::unique_ptr<TiedEmbedding> tied;
  std::vector<int> tied_stages;
  bool tied_summed = false;
  /// The stages whose gradient reductions this step has waited for (wait_reductions runs once
  /// per stage and step: the tied sum may wait for a stage before its own instruction does).
  std::set<int> reductions_waited;
  std::vector<plan::TimelineEvent>* timeline = nullptr;
  std::chrono::steady_clock::time_point step_start;
  int64_t current_step = 0;                       // of the train_step running
  std::vector<LayerTimeSample> layer_times;       // options.record_layer_times

  Impl(const plan::Plan& p, const RankLayout& l, Communicator& w, PeerTransport& t,
       const ExecutorOptions& o)
      : plan(p), layout(l), world(w), transport(t), options(o) {}

  StageState& stage(int s) { return stages.at(s); }
  /// True when stage s runs on this rank's group (no send/recv between s and its neighbour).
  bool local(int s) const { return stages.count(s) != 0; }
  int samples(int s) const;  // this rank's samples per micro-batch in stage s

  void execute(const plan::Instruction& instruction, const DataLoader& loader, int64_t step);
  void forward(int s, int mb, const DataLoader& loader, int64_t step);
  /// A whole backward, or (input_pass) a split backward's input pass.
  void backward(int s, int mb, bool input_pass);
  /// A split backward's weight pass.
  void backward_weight(int s, int mb);
  void with_layer_done(int s, int mb, const std::function<void()>& pass);
  /// Runs `pass` (a whole backward or a weight pass of (s, mb)) with the module reporting
  /// finished layers to layer_done, so that the last one starts the gradient buckets.
  // executor_bridge.cpp
  void send_activation(int s, int mb);
  void recv_activation(int s, int mb);
  void send_gradient(int s, int mb);
  void recv_gradient(int s, int mb);
  // executor_update.cpp
  void reduce_bucket(int s, int bucket);
  void wait_reductions(int s);
  void optimizer_step(int s);
  /// The optimizer step of stage s on its reduced (and unscaled) gradients, the all-gather of
  /// sharded parameters, each recorded as whale-sim names them.
  void update_parameters(int s);
  /// Between two layers of a backward of stage s: starts the buckets of s that became ready
  /// when this is s's last backward, and lets every bucket in flight on this rank progress.
  void layer_done(int s, int layer, bool last_backward);
  /// After the program, with loss scaling or clipping: agrees with every rank whether all
  /// gradients are finite (fp16), then on their global norm (clipping), unscales and clips them
  /// in one pass and runs the deferred optimizer steps, or skips them all (an overflow).
  void finish_deferred_steps();
  /// Whether optimizer steps wait for finish_deferred_steps: under loss scaling or clipping.
  bool defers_steps() const { return scaler.enabled() || options.clip_grad > 0; }
  /// This rank's share of the squared global gradient norm (StageOptimizer::
  /// gradient_square_sum over its stages, each element of the model counted on one rank).
  double gradient_square_sum() const;
  /// Records [start, now) (or [start, end)) on `lane` when a timeline is kept.
  void record(const char* lane, const std::string& name, int s, int mb,
              std::chrono::steady_clock::time_point start);
  void record(const char* lane, const std::string& name, int s, int mb,
              std::chrono::steady_clock::time_point start,
              std::chrono::steady_clock::time_point end);
};

}  // namespace whale::exec

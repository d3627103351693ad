// File: executor.h
// Executor: runs this rank's part of a plan, one training step at a time, by interpreting its
// group's ScheduleProgram: forwards and backwards through StageModules, activations and
// gradients across stage groups through bridges, weighted gradient reduction across dp
// replicas (optionally ZeRO-1 sharded) and the model's optimizer (AdamW or SGD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/learning_rate_schedule.h"
#include "whale/exec/runtime/data_loader.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/exec/comm/run_transport.h"
#include "whale/plan/plan.h"
#include "whale/plan/timeline.h"

namespace whale::exec {

class GroupCommunicatorFactory;

struct ExecutorOptions {
  uint64_t seed = 0;             // initial parameters (the same model under every plan)
  /// The model's optimizer's (training.optimizer: AdamW or SGD) rate of each update.
  LearningRateSchedule learning_rate;
  double momentum = 0.9;         // SGD's
  double weight_decay = 0.0;     // AdamW's decoupled, SGD's L2; matrices only (ParameterView::decayed)
  double clip_grad = 0.0;        // the global gradient norm's bound (gradient_clipping.h); 0: none
  bool record_timeline = false;  // keep the events of each step (last_timeline)
  int threads = 1;               // CPU threads of this rank's backend (>= 1)
  bool cpu_device = false;       // run on a CPU backend whatever device the plan gives the rank
  bool record_layer_times = false;  // time every layer pass (layer_time_samples)
  /// The CUDA ordinal of a GPU rank (assign_local_gpus); -1 takes its plan device's local index.
  int local_gpu = -1;
  /// Bytes of a GPU rank's device arena (whale-run sizes it from the plan's predicted peak);
  /// 0 leaves the backend's default.
  std::size_t arena_bytes = 0;
  /// Makes this rank's tensor, data and tied-embedding communicators (rank_communicators.h);
  /// null: make_world_group_factory (MPI, NCCL and the host bridge over MPI_COMM_WORLD). Must
  /// outlive the Executor.
  GroupCommunicatorFactory* group_factory = nullptr;
};

/// One timed pass of one model layer on this rank (StageModule::set_layer_timed): forward, or
/// a whole backward; the tensor group's collectives excluded.
struct LayerTimeSample {
  int64_t step = 0;          // the train_step it belongs to
  std::string device_model;  // this rank's device model in the plan
  plan::LayerKind kind{};
  int tp = 1;                // the stage's tensor-parallel degree
  int micro_batch = 0;       // this rank's samples per micro-batch in the stage
  bool backward = false;
  double seconds = 0;
};

/// One parameter of the whole model as the single-device model holds it: its tp shards
/// reassembled (parameter_shard), taken from replica 0. Plan-independent.
struct FullParameter {
  std::string name;
  std::vector<float> values;  // row-major, TensorShard::full_count() floats
};

class Executor {
 public:
  /// Builds this rank's backend (make_backend: the plan's device of this rank, or the CPU with
  /// options.cpu_device; the plan's precision), stage modules, communicators (rank_groups:
  /// tensor, data and tied-embedding groups with their transports, made by
  /// options.group_factory; created collectively: every rank of `world` must construct its
  /// Executor at the same time) and optimizer state. `world` and `transport` span the same
  /// ranks as `layout` (MPI_COMM_WORLD's, unless a group factory says otherwise), and must
  /// outlive the Executor. Throws whale::Error naming the plan for a plan it cannot run
  /// (consecutive stages on one group with different device layouts).
  Executor(const plan::Plan& plan, const RankLayout& layout, Communicator& world,
           PeerTransport& transport, const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs one training step on the samples of step `step` of `loader` and updates the
  /// parameters. Returns the mean token cross-entropy of the global batch before the update,
  /// identical on every rank.
  double train_step(const DataLoader& loader, int64_t step);

  /// Events of the last step on this rank (device = this rank's device id), from its start
  /// after a barrier, when options.record_timeline.
  const std::vector<plan::TimelineEvent>& last_timeline() const { return timeline_; }

  /// Every layer pass of every step so far, in the order run, when options.record_layer_times.
  const std::vector<LayerTimeSample>& layer_time_samples() const;

  /// fp16 dynamic loss scaling (LossScaler): steps skipped so far for inf/NaN gradients, and
  /// the scale of the next step; 0 and 1 under other precisions.
  int64_t skipped_steps() const;
  double loss_scale() const;
  /// The global norm of the last step's gradients before clipping (unscaled under fp16), the
  /// same on every rank, when options.clip_grad > 0; -1 otherwise or where fp16 skipped it.
  double grad_norm() const;

  /// This rank's backend: its device name ("cpu", "cuda:0", ...) and the most bytes of backend
  /// memory it has held at once so far (Backend::peak_memory_bytes).
  std::string device_name() const;
  std::size_t peak_memory_bytes() const;

  /// This rank's parameters and optimizer state, flat, for a checkpoint.
  std::vector<float> save_state() const;
  /// Restores save_state()'s output; throws std::invalid_argument on a size mismatch.
  void load_state(const std::vector<float>& state);

  /// Collective over all ranks: every parameter of the model, full, sorted by name, on rank 0
  /// (empty elsewhere).
  std::vector<FullParameter> gather_parameters();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<plan::TimelineEvent> timeline_;
};

}  // namespace whale::exec

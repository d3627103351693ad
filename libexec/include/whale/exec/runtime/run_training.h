// File: run_training.h
// whale-run's job: load the plan and data, check them against the MPI world, train for a
// number of steps with the Executor, and write logs, metrics, checkpoints and the trace.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace whale::plan {
struct Plan;
}

namespace whale::exec {

/// Per device of a plan (indexed by device id), the bytes its model tensors are predicted to
/// peak at (whale-sim's memory model); whale-run sizes GPU ranks' device arenas from it.
using PredictedTensorBytes = std::function<std::vector<double>(const plan::Plan&)>;

struct RunOptions {
  std::string plan_file;
  std::string data_file;            // text (byte-level tokens) or a binary token file
  int64_t steps = 20;               // total steps; a resumed run continues up to it
  double learning_rate = 1e-3;      // the model's optimizer's (AdamW or SGD) peak rate
  double min_learning_rate = 0.0;   // where linear and cosine decay end
  int64_t warmup_steps = 0;         // updates of the linear warm-up from 0
  std::string lr_decay_style = "constant";  // constant, linear or cosine
  int64_t lr_decay_steps = 0;       // updates to the end of the decay; 0: `steps`
  double weight_decay = 0.0;        // AdamW's decoupled, SGD's L2; matrices only
  double momentum = 0.9;            // SGD's
  double clip_grad = 0.0;           // the global gradient norm's bound; 0: no clipping
  uint64_t seed = 1234;             // parameters and data order
  bool seed_given = false;          // --seed was given (a resumed run must then match it)
  std::string checkpoint_dir;       // "" = no checkpoints
  int64_t checkpoint_every = 0;     // 0 = only at the end (and on SIGINT/SIGTERM)
  bool resume = false;              // continue from <checkpoint_dir>/latest
  std::string metrics_file;         // JSON lines, one object per step
  std::string trace_file;           // Chrome trace of the last step
  std::string layer_times_file;     // CSV of median per-layer times (plan::kLayerTimesCsvHeader)
  std::string kernel_times_file;    // CSV of rank 0's GPU kernel times per step (kernel_times.h)
  std::string dump_params_file;     // per-parameter summary after training
  int64_t log_every = 1;            // 0 = no per-step log lines
  int threads = 0;                  // CPU threads per rank; 0 = cores / ranks on the node
  std::string device;               // "" = the plan's devices; "cpu" = CPU ranks on purpose;
                                    // "gpu" = GPUs of any model (placement: rank_placement.h)
  PredictedTensorBytes predicted_tensor_bytes;  // null: GPU ranks get the default arena
};

/// Trains as `options` says on every rank of MPI_COMM_WORLD (MPI must be initialised).
/// Every input is checked before any output file is opened, so bad input overwrites nothing.
/// Throws whale::Error on bad input; rank 0 writes the log to `log`.
void run_training(const RunOptions& options, std::ostream& log);

/// whale-run's error boundary: runs run_training under whale::run_guarded and returns 0, or
/// prints "whale-run: error: [rank R: ]WHAT" (or "internal error") as one line to stderr and,
/// when other ranks exist, ends them all with MPI_Abort; returns 2 for bad input, 3 for a bug.
int run_training_main(const RunOptions& options);

}  // namespace whale::exec

// File: executor_optimizer.h
// StageOptimizer: AdamW over one stage module's parameters, whose gradients the executor has
// summed across the stage's dp replicas (gradient_reducer.h); under ZeRO-1 and ZeRO-2 each
// replica updates only its shard of the flattened parameters (zero_shard.h), then all-gathers
// them.
#pragma once

#include <memory>
#include <vector>

#include "whale/exec/model/adamw.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/stage_module.h"
#include "runtime/zero_shard.h"

namespace whale::exec {

class StageOptimizer {
 public:
  /// `dp` is the stage's data-parallel group (null for one replica). With `shard`, each
  /// member keeps the optimizer state of 1/dp of the flattened parameters only. `backend` holds
  /// the parameters (the stage module's) and the optimizer state; it must outlive this.
  StageOptimizer(Backend& backend, std::vector<ParameterView> parameters, Communicator* dp,
                 bool shard, const AdamWConfig& config);
  ~StageOptimizer();

  /// One AdamW step on the reduced gradients; sharded: on this member's shard only (it reads
  /// the gradients of that shard only, which is all ZeRO-2's reduce-scatter sums).
  void step();
  /// Sharded: all-gathers the updated shards, so that every member holds all the parameters
  /// (whale-sim's "allgather weights"); nothing otherwise. Follows step(). The shards travel
  /// in backend memory (device buffers on a GPU rank, for NCCL), copied on the compute stream.
  void share_parameters();
  bool sharded() const { return shard_; }

  /// Parameters, then m and v of this member's state, then the step count: for checkpoints.
  std::vector<float> save_state() const;
  /// Restores save_state(); returns the floats it consumed from `state` at `offset`.
  /// Throws std::invalid_argument when too few remain.
  std::size_t load_state(const std::vector<float>& state, std::size_t offset);

 private:
  /// Calls visit(parameter slice, its offset from `begin`) for every parameter's part of the
  /// flat range [begin, begin + count), in order.
  template <class Visit>
  void for_each_slice(std::size_t begin, std::size_t count, Visit visit) const;
  /// Copies the flat [begin, begin + count) of the parameter values to or from `flat` (host
  /// memory), by the backend's download and upload.
  void gather(std::size_t begin, std::size_t count, float* flat) const;
  void scatter(std::size_t begin, std::size_t count, const float* flat);

  std::vector<ParameterView> parameters_;
  Communicator* dp_ = nullptr;
  bool shard_ = false;
  AdamWConfig config_;
  Backend& backend_;
  std::size_t total_ = 0;        // parameters of the stage shard this rank holds
  ZeroShard slice_;              // this member's flat elements (all of them when not sharded)
  std::unique_ptr<AdamW> adamw_; // over slice_
  // Step-to-step scratch in backend memory, kept so that every step reuses warm memory (a fresh
  // 10+ MB buffer per step costs more in page faults than the all-gather itself on CPUs):
  Tensor flat_;  // fp32, the flattened parameters, padded to dp shards
  Tensor mine_;  // fp32, this member's shard (padded to the shard size)
};

}  // namespace whale::exec

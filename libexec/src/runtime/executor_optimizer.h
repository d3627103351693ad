// File: executor_optimizer.h
// StageOptimizer: AdamW over one stage module's parameters, with its gradients reduced across
// the stage's dp replicas: a plain all-reduce, or (ZeRO-1) a reduce-scatter so that each
// replica updates only its shard of the flattened parameters, then an all-gather.
#pragma once

#include <memory>
#include <vector>

#include "whale/exec/model/adamw.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/stage_module.h"

namespace whale::exec {

class StageOptimizer {
 public:
  /// `dp` is the stage's data-parallel group (null for one replica). With `shard`, each
  /// member keeps the optimizer state of 1/dp of the flattened parameters only. `backend` holds
  /// the parameters (the stage module's) and the optimizer state; it must outlive this.
  StageOptimizer(Backend& backend, std::vector<ParameterView> parameters, Communicator* dp,
                 bool shard, const AdamWConfig& config);
  ~StageOptimizer();

  /// Sums the gradients over the dp group (every replica's gradient is already scaled by
  /// 1 / global tokens, so the sum is the global-batch gradient). Sharded: this member keeps
  /// the sum of its shard only.
  void reduce_gradients();
  /// One AdamW step; sharded: on this member's shard, then an all-gather of the parameters.
  void step();

  /// Parameters, then m and v of this member's state, then the step count: for checkpoints.
  std::vector<float> save_state() const;
  /// Restores save_state(); returns the floats it consumed from `state` at `offset`.
  /// Throws std::invalid_argument when too few remain.
  std::size_t load_state(const std::vector<float>& state, std::size_t offset);

 private:
  /// Copies the flat [begin, begin + count) of the gradients (values) to or from `flat` (host
  /// memory), by the backend's download and upload.
  enum class Field { value, gradient };
  void gather(Field field, std::size_t begin, std::size_t count, float* flat) const;
  void scatter(Field field, std::size_t begin, std::size_t count, const float* flat);

  std::vector<ParameterView> parameters_;
  Communicator* dp_ = nullptr;
  bool shard_ = false;
  AdamWConfig config_;
  Backend& backend_;
  std::size_t total_ = 0;        // parameters of the stage shard this rank holds
  std::size_t shard_size_ = 0;   // flat elements per member, padded (total_ when not sharded)
  std::size_t shard_begin_ = 0;  // first flat index of this member's shard
  std::unique_ptr<AdamW> adamw_; // over [shard_begin_, shard_begin_ + shard_size_) clamped
  float* contiguous_gradients_ = nullptr;  // the flat gradient buffer, or null (reduced via flat_)
  // Step-to-step scratch, kept so that every step reuses warm memory (a fresh 10+ MB buffer per
  // step costs more in page faults than the all-reduce itself on CPUs):
  std::vector<float> flat_;  // the flattened gradients or parameters, padded to dp shards
  std::vector<float> mine_;  // this member's shard
};

}  // namespace whale::exec

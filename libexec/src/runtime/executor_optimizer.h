// File: executor_optimizer.h
// StageOptimizer: the model's optimizer (AdamW or SGD) over one stage module's parameters, whose gradients the executor has
// summed across the stage's dp replicas (gradient_reducer.h); under ZeRO-1 and ZeRO-2 each
// replica updates only its shard of the flattened parameters (zero_shard.h), then all-gathers
// them; the routed experts of a separate expert layout are sharded over their own group.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "whale/exec/model/optimizer.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/stage_module.h"
#include "runtime/zero_shard.h"

namespace whale::exec {

class StageOptimizer {
 public:
  /// `dp` is the stage's data-parallel group (null for one replica). With `shard`, each
  /// member keeps the optimizer state of 1/dp of the flattened parameters only. With
  /// `separate_experts` (a mixture-of-experts stage whose routed experts are laid out apart
  /// from attention, expert_groups.h) the routed experts' parameters (ParameterView::
  /// expert_parallel) form a second flat range, sharded over `expert_dp` (the ranks holding the
  /// same experts; null when this rank alone holds them) and the others over `dp`, as
  /// Megatron-Core's distributed optimizer shards expert and dense parameters over their own
  /// data-parallel groups. `backend` holds the parameters (the stage module's) and the
  /// optimizer state; it must outlive this.
  StageOptimizer(Backend& backend, std::vector<ParameterView> parameters, Communicator* dp,
                 bool shard, const OptimizerConfig& config, bool separate_experts = false,
                 Communicator* expert_dp = nullptr);
  ~StageOptimizer();

  /// One optimizer step on the reduced gradients; sharded: on this member's shards only (it reads
  /// the gradients of those shards only, which is all ZeRO-2's reduce-scatter sums).
  void step();
  /// Sharded: all-gathers the updated shards, so that every member holds all the parameters
  /// (whale-sim's "allgather weights"); nothing otherwise. Follows step(), and overwrites the
  /// stage's gradients (dead until the next step's zero_gradients) with the gathered shards.
  /// The shards travel in backend memory (device buffers on a GPU rank, for NCCL), copied on
  /// the compute stream.
  void share_parameters();
  bool sharded() const;
  /// The elements [first, second) of `parameter` (one of the stage's, by name) inside this
  /// member's slice of its range: all of them in a whole range; under ZeRO-2 the only ones
  /// whose gradient the reduction sums on this member.
  std::pair<std::size_t, std::size_t> slice_of(const ParameterView& parameter) const;
  /// This member's share of the global gradient norm's square: the sum of squares of the
  /// reduced gradients of the trained parameters that `counted` accepts, taken in a sharded
  /// range over this member's slice (the members' slices partition it) and in a whole range
  /// from the parameters whose copy `copy_counted` says this rank's group counts (one member of
  /// the ranks holding the same copy). Call between the reduction and step().
  double gradient_square_sum(const std::function<bool(const ParameterView&)>& counted,
                             const std::function<bool(const ParameterView&)>& copy_counted) const;

  /// Per flat range (one, or the dense then the experts' under separate_experts): its
  /// parameters, then each state buffer of this member's slice (AdamW: m, v; SGD: the
  /// momentum buffer); then the step count: for checkpoints.
  std::vector<float> save_state() const;
  /// Restores save_state(); returns the floats it consumed from `state` at `offset`.
  /// Throws std::invalid_argument when too few remain.
  std::size_t load_state(const std::vector<float>& state, std::size_t offset);

 private:
  /// One flat range of parameters, sharded over `group` or whole.
  struct Range {
    std::vector<ParameterView> parameters;
    Communicator* group = nullptr;
    bool shard = false;
    std::size_t total = 0;          // the range's elements
    ZeroShard slice;                // this member's flat elements (all of them when not sharded)
    std::unique_ptr<SlicedOptimizer> optimizer;   // over slice
    // The all-gather's scratch in backend memory (share_range), kept from step to step so that
    // every step reuses warm memory: members floats when the gradients lie back to back, else
    // the flattened parameters padded to the group's shards.
    Tensor scratch;
  };
  void add_range(std::vector<ParameterView> parameters, Communicator* group, bool shard);
  /// Calls visit(parameter slice, its offset from `begin`) for every parameter's part of the
  /// flat range [begin, begin + count) of `range`, in order.
  template <class Visit>
  static void for_each_slice(const Range& range, std::size_t begin, std::size_t count,
                             Visit visit);
  void share_range(Range& range);
  /// The range's gradients when they lie back to back in its parameters' order (fp32), else null.
  static float* contiguous_gradients(const Range& range);
  /// One all-gather of the floats [offset, offset + count) of every member's shard through
  /// `out` (backend memory, members * count floats; this member's block is filled in place),
  /// copied into the parameters they belong to.
  void gather_round(Range& range, float* out, std::size_t offset, std::size_t count);

  OptimizerConfig config_;
  Backend& backend_;
  std::vector<Range> ranges_;
};

}  // namespace whale::exec

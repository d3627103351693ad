// File: gradient_reducer.h
// GradientReducer: the data-parallel gradient reduction of one stage on this rank, bucket by
// bucket as the schedule program says (reduce_bucket, wait_reductions): each bucket is a
// non-blocking all-reduce, in place, of its layers' part of the stage's flat gradient buffer;
// with sharded gradients (ZeRO-2) a non-blocking reduce-scatter, in place, that sums only the
// part of the bucket inside each replica's ZeRO shard (zero_shard.h), on that replica; on a
// stage whose replicas run at different tp degrees, non-blocking all-reduces of packed pieces
// (mixed_tp_packing.h), copied back once complete.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "runtime/mixed_tp_packing.h"
#include "whale/exec/backend/tensor.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/gradient_buckets.h"

namespace whale::exec {

class GradientReducer {
 public:
  using Clock = std::chrono::steady_clock;

  /// `parameters`: the stage module's, in layer order with their fp32 gradients back to back in
  /// one tensor of `backend` (else std::logic_error); `buckets`: plan::gradient_buckets of the
  /// stage; `dp`: the stage's data-parallel group. Every replica's gradient is already scaled
  /// by 1 / global tokens, so the sum over the group is the global-batch gradient, weighted by
  /// samples. With `shard_gradients`, after wait_all() only this replica's ZeRO shard of the
  /// flat gradient buffer holds the sum; the rest holds unspecified values. `dp` must outlive
  /// this. Expert-parallel parameters (ParameterView::expert_parallel) are summed over
  /// `expert_dp` instead (the replicas holding the same experts; null when this replica alone
  /// holds them) when it is not `dp` itself; each bucket then reduces its runs of dense and
  /// expert parameters separately, and with `shard_gradients` reduce-scatters each run over
  /// its group in the ZeRO shards of its kind's own flat range (the dense parameters' over dp,
  /// the experts' over expert_dp: StageOptimizer's ranges under separate experts).
  GradientReducer(const std::vector<ParameterView>& parameters,
                  std::vector<plan::GradientBucket> buckets, Communicator* dp,
                  bool shard_gradients, Communicator* expert_dp);

  /// A mixed-tp stage (plan::Stage::mixed_tp): bucket b's gradients are copied into pack
  /// buffers of `backend` as `packing[b]` (mixed_tp_packing) says, each pack summed over
  /// `groups[pack.group]` (the piece holders' groups, then the stage's), and copied back once
  /// complete, then freed. After wait_all() every gradient of this rank holds the sum over the replicas,
  /// each replica's replicated parameters counted once. `groups` must outlive this.
  GradientReducer(Backend& backend, const std::vector<ParameterView>& parameters,
                  std::vector<plan::GradientBucket> buckets,
                  std::vector<std::vector<PackedGradients>> packing,
                  std::vector<Communicator*> groups);

  int buckets() const { return static_cast<int>(buckets_.size()); }

  /// The stage's last backward has finished `layer`: starts, in order, every bucket not yet
  /// started whose layers are all done (first_layer >= layer), then lets the ones in flight
  /// progress (MPI_Test). For StageModule::set_layer_done.
  void layer_done(int layer);
  /// Starts buckets 0..b that have not started (the program's reduce_bucket(stage, b)); the
  /// communicator orders each after the compute stream's work so far (communicator.h), so the
  /// host does not wait for the backward here.
  void start_through(int b);
  /// Lets the buckets in flight progress (MPI_Test); never blocks.
  void progress();
  /// Waits for every bucket; std::logic_error when one was never started.
  void wait_all();

  /// Of bucket b in the last step: when it started and when this rank saw it complete.
  Clock::time_point started(int b) const { return started_.at(b); }
  Clock::time_point completed(int b) const { return completed_.at(b); }

 private:
  std::vector<plan::GradientBucket> buckets_;
  Communicator* dp_;
  std::vector<float*> begin_;         // per bucket: its first gradient
  std::vector<std::size_t> count_;    // per bucket: its gradients
  std::vector<std::vector<std::size_t>> blocks_;  // per bucket under ZeRO-2: each replica's part
  /// A bucket's parameters of one kind, back to back: summed over `group` (null: not at all).
  struct Run {
    float* begin = nullptr;
    std::size_t count = 0;
    Communicator* group = nullptr;
    bool expert = false;           // routed experts' (ParameterView::expert_parallel)
    std::size_t kind_offset = 0;   // of `begin` among the elements of its kind
    std::vector<std::size_t> blocks;  // ZeRO-2: each member's part (zero_block_counts)
  };
  std::vector<std::vector<Run>> runs_;  // per bucket when expert parameters reduce apart
  /// Mixed tp: the backend, the flat gradient buffer, per bucket its packs and their buffers
  /// (held from the bucket's start to its completion), the groups they are summed over
  /// (mixed_tp_packing.h); all empty otherwise.
  Backend* backend_ = nullptr;
  TensorView flat_;
  std::vector<std::vector<PackedGradients>> packing_;
  std::vector<std::vector<Tensor>> packs_;
  std::vector<Communicator*> pack_groups_;
  void start_packed(int b);
  /// Marks bucket b complete now; copies its packs back into the flat gradient buffer.
  void complete(int b);
  /// Per bucket its collectives in flight; empty before its start.
  std::vector<std::vector<std::unique_ptr<CommRequest>>> requests_;
  std::vector<bool> done_;
  std::vector<Clock::time_point> started_, completed_;
  int next_ = 0;                      // the next bucket to start
};

}  // namespace whale::exec

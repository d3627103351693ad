// File: cost_table.h
// CostTable: every duration the engine needs, computed once per plan before the run: per
// (stage, replica) compute, recomputation and TP time, also per gradient bucket; per stage the
// all-reduce of each gradient bucket and the optimizer; per stage boundary the bridge
// transfers. Private to libsim.
#pragma once

#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/units.h"
#include "whale/sim/memory_model.h"

namespace whale::sim {

/// One replica of one stage, for one micro-batch of its share of samples (per device).
struct ReplicaCost {
  Seconds forward_s = 0;       // compute kernels of the forward
  Seconds backward_s = 0;      // compute kernels of the backward, recomputation excluded
  Seconds backward_weight_s = 0;  // the weight-gradient part of backward_s: a split
                                  // backward's weight pass (no TP communication); its input
                                  // pass is recompute_s, then backward_s - backward_weight_s
  Seconds recompute_s = 0;     // recomputation kernels run at the start of the backward
  Seconds tp_forward_s = 0;    // TP all-reduces of one forward
  Seconds tp_backward_s = 0;   // TP collectives of one backward: the forward's again, plus under
                               // sequence parallelism the all-gather of the kept input shards
  Seconds tp_recompute_s = 0;  // TP all-reduces repeated by recomputation
  Flops model_flops = 0;       // 3 x forward GEMM flops of this device (no recomputation)
  // Per gradient bucket b of the stage (plan::gradient_buckets; empty when the stage reduces no
  // gradients, Plan::reduces_gradients): the
  // backward compute and TP collectives of its layers. Their sums over the buckets are
  // backward_s and tp_backward_s; bucket_weight_s, the weight pass's share, sums to
  // backward_weight_s.
  std::vector<Seconds> bucket_backward_s;
  std::vector<Seconds> bucket_tp_s;
  std::vector<Seconds> bucket_weight_s;
};

/// A bridge transfer of one micro-batch between adjacent stages, forward direction.
struct TransferCost {
  int from_replica = 0;
  int to_replica = 0;
  Seconds time_s = 0;  // the same bytes flow back as gradients
};

struct StageCost {
  std::vector<ReplicaCost> replicas;       // by replica
  std::vector<Seconds> bucket_allreduce_s; // per gradient bucket: its reduction across the
                                           // replicas (all-reduce; reduce-scatter with sharded
                                           // gradients; at dp 1 the routed experts' bytes over
                                           // expert dp); empty when the stage reduces nothing
  Seconds dp_gather_s = 0;                 // sharded optimizer: all-gather of the updated
                                           // weights after the optimizer step (at dp 1, the
                                           // routed experts' over expert dp)
  std::vector<Seconds> optimizer_s;        // by replica
  Seconds tied_embedding_s = 0;            // tied embeddings across device groups: the
                                           // all-reduce of the token table's gradient between
                                           // the first and the last stage, before the optimizer
                                           // step of both (0 for every other stage)
  std::vector<TransferCost> to_next;       // bridge to stage + 1 (empty for the last stage)
};

struct CostTable {
  std::vector<StageCost> stages;
};

/// Builds the table of a validated plan; `memories` are its replicas' peaks by [pipeline group]
/// [replica] (program_memories), whose micro-batches in flight size the cache working set of
/// each replica's layers (layer_warm_fractions).
CostTable build_cost_table(const plan::Plan& plan, const std::vector<std::vector<MemoryBreakdown>>& memories);

}  // namespace whale::sim

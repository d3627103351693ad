// File: plan.h
// Plan: the parallel strategy of one training step, the contract between whale-plan, whale-sim
// and whale-run. The model is shared/DESIGN.md's "plan model" (Whale's TaskGraphs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/expert_ownership.h"
#include "whale/plan/model.h"
#include "whale/plan/framework_precision.h"
#include "whale/plan/precision.h"
#include "whale/plan/limits.h"

namespace whale::plan {

enum class ScheduleKind { gpipe, one_f_one_b, interleaved_1f1b, wave, zb_h1 };
/// "gpipe", "1f1b", "interleaved-1f1b", "wave", "zb-h1".
const char* to_string(ScheduleKind k);
bool parse_schedule_kind(const std::string& text, ScheduleKind* out);

enum class Recompute { none, full, selective };
/// "none", "full", "selective".
const char* to_string(Recompute r);
bool parse_recompute(const std::string& text, Recompute* out);

/// A pipeline stage: a contiguous range of layers run by a device group of dp x tp devices.
/// devices are replica-major: replica r holds devices[r*tp .. r*tp + tp).
/// With mixed tensor parallelism (replica_tps not empty) replica r holds replica_tps[r]
/// devices, from replica_offset(r) on, and tp is the largest of them (the finest shard).
/// Code that walks replicas uses replicas(), replica_tp(r), replica_offset(r) and
/// replica_devices(r), which serve both forms.
struct Stage {
  int first_layer = 0;          // index into Model::layers
  int end_layer = 0;            // one past the last layer (YAML: layers: [first, last], inclusive)
  std::vector<int> devices;     // global device ids
  int tp = 1;
  std::vector<int> shares;      // samples of each micro-batch per replica; sum = micro_batch_size
  Recompute recompute = Recompute::none;
  bool shard_optimizer = false; // ZeRO-1: optimizer state sharded across the dp replicas
  bool shard_gradients = false; // ZeRO-2: gradients sharded too (requires shard_optimizer)
  /// Sequence parallelism (Korthikanti et al. 2022, Section 4.2.2): the layernorm and dropout
  /// regions are sharded along the sequence across the tp devices, and each tensor-parallel
  /// all-reduce becomes an all-gather before and a reduce-scatter after the tp region.
  /// Requires tp > 1.
  bool sequence_parallel = false;
  /// The expert layout of a mixture-of-experts stage (MoE parallel folding, Megatron-Core):
  /// its MoE blocks' experts run on the same devices as ep x expert_tp x expert_dp, apart from
  /// attention's dp x tp, with ep * expert_tp * expert_dp = dp * tp. An expert-parallel group
  /// holds experts / ep experts on each member, or expert_counts. Dense models keep ep 1 and
  /// expert_tp 0.
  /// The expert ranks are expert-tp-major, as Megatron-Core orders them: device
  /// devices[(d * ep + e) * expert_tp + t] is expert-dp replica d, ep rank e, expert-tp rank t.
  /// YAML: ep, expert_tp (optional; validate_plan checks that ep divides the experts, unless
  /// expert_counts splits them, and ep * expert_tp the stage's devices).
  int ep = 1;
  int expert_tp = 0;            // 0: the stage's tp
  /// Mixed tensor parallelism (Sailor's heterogeneous replicas): the tp degree of each replica,
  /// in replica order, summing to devices.size(); empty when every replica runs at `tp`.
  /// YAML: replica_tp (instead of tp). validate_plan requires each to divide the largest (the
  /// shards nest) and leaves sequence parallelism, ZeRO and expert layouts to uniform stages.
  std::vector<int> replica_tps;
  /// The routed experts each ep rank holds, in ep-rank order (uneven where the ep group's
  /// devices differ: more experts on the faster ones); empty: experts / ep each. Rank e holds
  /// experts [sum of counts before e, + counts[e]) of every MoE block. YAML: expert_counts
  /// (optional; validate_plan checks ep entries, each positive, summing to the experts).
  std::vector<int> expert_counts;

  /// Whether the replicas run at different tp degrees (replica_tps given).
  bool mixed_tp() const { return !replica_tps.empty(); }
  /// Data-parallel replicas: replica_tps.size(), or devices / tp.
  int replicas() const;
  int dp() const { return replicas(); }
  /// The tp degree of replica r.
  int replica_tp(int r) const { return mixed_tp() ? replica_tps.at(r) : tp; }
  /// Index into devices of replica r's first device (tp rank 0).
  int replica_offset(int r) const;
  /// The stage as replica r computes it: a copy whose tp is replica_tp(r), so that the per-device
  /// figures that read `tp` (parameters, activations, GEMM shapes) are replica r's. The copy
  /// keeps replica_tps, devices and shares, so replicas(), replica_devices() are unchanged.
  Stage as_replica(int r) const;
  /// The expert tensor-parallel degree in effect: expert_tp, or tp when it is 0.
  int expert_tp_degree() const { return expert_tp > 0 ? expert_tp : tp; }
  /// Expert data-parallel replicas: devices / (ep * expert_tp_degree()).
  int expert_dp() const { return static_cast<int>(devices.size()) / (ep * expert_tp_degree()); }
  /// The ep devices of expert-dp replica d and expert-tp rank t, in ep-rank order: the group
  /// among which the MoE blocks' all-to-alls dispatch and combine tokens.
  std::vector<int> expert_parallel_group(int d, int t) const;
  /// The expert_dp() devices of ep rank e and expert-tp rank t, one per expert-dp replica in
  /// replica order: they hold the same experts' same shard, so their expert gradients are
  /// reduced together.
  std::vector<int> expert_data_parallel_group(int e, int t) const;
  /// With expert_tp above tp (a multiple of it), the expert-tp group of expert-dp replica d and
  /// ep rank e spans expert_tp / tp attention replicas: its members of attention tp rank a, one
  /// per replica in replica order. Each holds other tokens, so they gather each other's rows
  /// before the experts and sum their partial outputs after.
  std::vector<int> expert_token_gather_group(int d, int e, int a) const;
  /// The ep rank of the device at `index` in `devices`: (index / expert_tp_degree()) % ep.
  int ep_rank_of(int index) const { return index / expert_tp_degree() % ep; }
  /// Which ep rank holds which of `experts` routed experts (expert_counts, or experts / ep
  /// each). Throws std::invalid_argument for counts validate_plan refuses.
  ExpertOwnership expert_ownership(int experts) const;
  /// The routed experts ep rank `rank` holds: expert_ownership(experts).count(rank).
  int experts_held(int rank, int experts) const;
  /// The first routed expert ep rank `rank` holds: expert_ownership(experts).first(rank).
  int first_expert_held(int rank, int experts) const;
  /// Devices of replica r, in tp-rank order.
  std::vector<int> replica_devices(int r) const;
  /// The devices holding finest shard `piece` (0 .. tp - 1; tp is the largest replica tp) of
  /// the stage's tp-split parameters, one per replica in replica order: tp rank piece * t / tp
  /// of a replica at tp t (the shards nest, so that rank holds the pieces [rank * tp / t,
  /// (rank + 1) * tp / t)). Without replica_tp: tp rank `piece` of every replica, the
  /// data-parallel group of that tp rank. whale-sim prices and whale-run runs the data-parallel
  /// gradient exchange of a mixed-tp stage as one all-reduce per piece among these devices.
  std::vector<int> piece_holders(int piece) const;
  /// First sample (within a micro-batch) of replica r: the sum of shares before r.
  int first_sample(int r) const;
  /// Whether global device `device` is one of the stage's devices.
  bool holds(int device) const;
  /// The position of global device `device` in `devices` (its replica-major index). Throws
  /// whale::Error naming the device and the stage's devices when the stage does not hold it.
  int index_of(int device) const;
};

/// The schedule. `chunks` is the number of stages per device group (model chunks per device)
/// for interleaved-1f1b and wave; 1 otherwise.
/// PyTorch DDP's default gradient bucket size, bucket_cap_mb = 25 (MiB).
constexpr double kDefaultGradientBucketMib = 25.0;

struct Schedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int chunks = 1;
};

struct Plan {
  std::string source_file;    // "" when built in code
  std::string cluster_file;   // as referenced by the plan ("" when embedded)
  std::string model_file;     // as referenced by the plan ("" when embedded)
  Cluster cluster;
  Model model;
  Precision precision = Precision::bf16;
  /// How the framework applies `precision`: TF32 GEMMs under fp32, the gradient-reduction
  /// precision and master weights (framework_precision.h). YAML: allow_tf32,
  /// grad_reduce_precision, master_weights; each defaults to the model's training section.
  FrameworkPrecision framework_precision;
  int micro_batch_size = 1;   // samples per micro-batch
  int micro_batches = 1;      // micro-batches per step
  /// Size of the data-parallel gradient buckets (gradient_buckets.h), in MiB of one tp shard's
  /// gradients. Default: PyTorch DDP's (torch.nn.parallel.DistributedDataParallel,
  /// bucket_cap_mb = 25).
  double gradient_bucket_mib = kDefaultGradientBucketMib;
  /// How the MoE layers exchange tokens (moe.h); YAML `moe_dispatcher`, only with a `moe:`
  /// model. It changes what whale-sim prices and what the Megatron export asks for, not the math.
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  Schedule schedule;
  /// Stages in model order. With chunks v over p device groups there are p*v stages;
  /// interleaved-1f1b places stage s on group s % p; wave places chunk c = s / p on group
  /// s % p going down for even c and p-1 - s % p going up for odd c (Hanayo's V).
  std::vector<Stage> stages;

  int global_batch() const { return micro_batch_size * micro_batches; }
  /// Number of distinct device groups (pipeline depth p) = stages.size() / chunks.
  int pipeline_groups() const;
  /// The device group (0..p-1) that runs stage s, by the placement rule above.
  int group_of_stage(int s) const;
  /// Whether the last stage holds a copy of the token table for a tied LM head (Megatron's
  /// embedding group): the model ties them and the embedding and the head lie in different
  /// stages. The copy is vocabulary-parallel over the last stage's tp, takes its own gradients
  /// and optimizer state, and the two copies' gradients are summed once per step; where both
  /// stages run on one device group (a wave of an even chunk count), those devices hold both
  /// copies, as whale-run does.
  bool last_stage_holds_table_copy() const;
  /// Whether the two copies of a tied token table (last_stage_holds_table_copy) are split
  /// alike: every replica of the first and of the last stage at one tp degree, so that the
  /// ranks holding the same rows sum them in place. Otherwise the copies' gradients are summed
  /// through an fp32 buffer of the whole table on each device of both stages, at the step's
  /// end (whale-run's TiedEmbedding), unless both stages run on the same devices.
  bool tied_table_copies_split_alike() const;
  /// Whether stage s sums gradients across devices after its backward passes, in its gradient
  /// buckets (gradient_buckets): it has dp > 1, or it is a mixture-of-experts stage whose
  /// experts are replicated over expert_dp > 1 devices (at dp 1 only the routed experts' part
  /// of each bucket is reduced, over the expert-dp group).
  bool reduces_gradients(int s) const;
};

/// Where a plan's group placement rule puts stage s, for p groups and `chunks` chunks.
int group_of_stage(ScheduleKind kind, int groups, int chunks, int stage);

/// Loads a plan; its cluster and model are read from the referenced files (relative to the
/// plan's folder) or from the embedded mappings. `profiles_dir` overrides the default.
/// Validates it (validate_plan) and throws whale::Error on bad input.
Plan load_plan(const std::string& path, const std::string& profiles_dir = "");
/// Checks every rule of a plan: layer ranges cover the model without overlap or gap, devices
/// exist in the cluster and are used by one group only, tp divides heads and the group size,
/// shares are positive integers summing to micro_batch_size, stage placement follows the
/// schedule, precision is known to every device. Throws whale::Error naming `plan.source_file`.
void validate_plan(const Plan& plan);
/// Writes the plan. With `embed`, the cluster and model are written inline so the file is
/// self-contained; otherwise they are referenced by cluster_file / model_file.
void save_plan(const Plan& plan, const std::string& path, bool embed);
/// The plan as YAML text (same as save_plan writes).
std::string plan_to_yaml(const Plan& plan, bool embed);

/// Parses "0-7,12,14-15" into ascending-as-written ids. Throws whale::Error(file, yaml_path),
/// also for an id >= `device_count` (checked before a range is expanded).
std::vector<int> parse_device_list(const std::string& text, const std::string& file,
                                   const std::string& yaml_path,
                                   int64_t device_count = kMaxDevices);
/// The compact form of a device list, e.g. "0-7,12".
std::string format_device_list(const std::vector<int>& ids);

}  // namespace whale::plan

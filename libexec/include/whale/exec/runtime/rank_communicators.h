// File: rank_communicators.h
// The communicators of one rank: which groups it joins and over which transport (NCCL, MPI or
// the host bridge), a pure function of the plan, the rank and where every rank computes; and
// the one factory through which the executor creates them.
#pragma once

#include <memory>
#include <vector>

#include "whale/exec/comm/communicator.h"
#include "whale/exec/comm/transport_choice.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// What a group communicator carries.
enum class GroupPurpose {
  tensor,          // a replica's tp ranks: the tensor-parallel region's collectives
  data,            // one tp rank across a stage's replicas: gradient buckets, ZeRO's gathers
  tied_embedding,  // the ranks summing the tied token table's copies (tied_group_ranks), one
                   // copy each (the table's stage and the tied head's on other devices)
  /// A mixture-of-experts stage with ep > 1 (plan::Stage::expert_parallel_group): the ep
  /// devices of one expert-dp replica and expert-tp rank; the MoE layers' token exchanges.
  expert_parallel,
  /// The devices holding the same experts (one ep rank and expert-tp rank of every expert-dp
  /// replica): the routed experts' gradient buckets.
  expert_data,
  /// With expert_tp above tp: the members of one expert-tp group that share an attention tp
  /// rank (plan::Stage::expert_token_gather_group), which gather each other's rows before the
  /// experts and sum their partial outputs after.
  expert_token_gather,
};
/// "tensor", "data", "tied-embedding", "expert-parallel", "expert-data", "expert-token-gather".
const char* to_string(GroupPurpose purpose);

/// One communicator a rank creates.
struct RankGroup {
  GroupPurpose purpose = GroupPurpose::tensor;
  int stage = 0;           // tied_embedding: the token table's stage; the others: the stage
  std::vector<int> ranks;  // world ranks (new rank i = ranks[i])
  TransportKind transport = TransportKind::mpi;
};

/// Where every rank of `layout` computes, by rank: the kind of its plan device's profile, or
/// cpu for every rank when `cpu_device` (whale-run --device cpu runs all on CPU backends).
std::vector<DeviceKind> rank_device_kinds(const plan::Plan& plan, const RankLayout& layout,
                                          bool cpu_device);

/// The groups `rank` joins, in the one global order every rank creates them in (so that
/// creation, collective over the members, cannot deadlock): its tensor and data groups in
/// plan_comm_groups' order, then the tied token table's group (tied_group_ranks, when the model ties its head to
/// the table across stages and `rank` holds a copy), then, stage by stage, the expert groups
/// of each stage whose experts are laid out apart from attention (expert_layout_groups; they
/// may list the same ranks as a tensor or data group, and are separate communicators all the
/// same). Each group's transport is choose_transport of its members' `kinds`
/// (rank_device_kinds): NCCL when all are GPUs, MPI when all are CPUs, the host bridge when
/// they mix. Groups of one rank are left out.
std::vector<RankGroup> rank_groups(const plan::Plan& plan, const RankLayout& layout,
                                   const std::vector<DeviceKind>& kinds, int rank);

/// The expert-parallel, expert-data and expert-token-gather groups of stage `s` that `rank` is
/// in (a mixture-of-experts stage with ep > 1 or an expert_tp other than tp; none otherwise), in
/// that order, each as world ranks in expert-rank order; groups of one rank left out.
std::vector<RankGroup> expert_layout_groups(const plan::Plan& plan, const RankLayout& layout,
                                            const std::vector<DeviceKind>& kinds, int s,
                                            int rank);

/// Makes the communicator of a RankGroup. Every call on a made communicator takes pointers to
/// this rank's backend memory (device memory on a GPU rank).
class GroupCommunicatorFactory {
 public:
  virtual ~GroupCommunicatorFactory() = default;
  /// The communicator of group.ranks over group.transport; collective over the members.
  virtual std::unique_ptr<Communicator> make(const RankGroup& group) = 0;
};

/// The factory of whale-run: make_group_communicator over MPI_COMM_WORLD with this rank's
/// CUDA ordinal `gpu` (-1 on a CPU rank) and its backend's compute stream (`compute_stream`,
/// Backend::native_stream; null on a CPU rank), after whose work NCCL and the bridge's copies
/// order themselves. MPI must be initialised when a group is made.
std::unique_ptr<GroupCommunicatorFactory> make_world_group_factory(int gpu, void* compute_stream);

}  // namespace whale::exec

// File: search_experts.h
// The planner's choice of a mixture-of-experts stage's expert layout (ep, expert_tp), apart
// from attention's dp x tp: expert-parallel groups inside fast links first.
#pragma once

#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

struct ExpertLayout {
  int ep = 1;
  int expert_tp = 1;
};

/// Every valid layout of a stage of `device_count` devices at tensor-parallel degree `tp` for
/// `moe`: ep dividing the experts, expert_tp a power of two up to tp, ep x expert_tp dividing
/// device_count. Ordered by ep x expert_tp, then ep, ascending.
std::vector<ExpertLayout> expert_layouts(const MoeSpec& moe, int device_count, int tp);

/// Every layout whale-run trains on a stage of `device_count` devices whose replicas all run at
/// tensor-parallel degree `tp`: ep dividing the experts, expert_tp a power of two that divides
/// tp or is a multiple of it (an expert-tp group then spans whole tensor groups) and divides the
/// expert FFN width, ep x expert_tp dividing device_count. Ordered as expert_layouts.
std::vector<ExpertLayout> runnable_expert_layouts(const MoeSpec& moe, int device_count, int tp);

/// The planner's search of expert layouts around its choice: variants of `plan` (a
/// mixture-of-experts plan) in which every stage takes one other layout of
/// runnable_expert_layouts that is valid on all of its stages with every expert-tp group inside
/// a node, with even expert counts. At most `most`, nearest to the first stage's layout first
/// (the sum of |log2| of the ep and expert_tp ratios), then in choose_expert_layout's order of
/// preference (the most sharding, then more ep). Empty for a dense plan or one with replicas of
/// different tp.
std::vector<Plan> expert_layout_variants(const Plan& plan, std::size_t most);

/// Variants of `plan` in which the stages of one kind (the device model of their first device,
/// their tp and their device count: on a heterogeneous cluster, a device model's stages) take
/// another layout valid on all of them (as expert_layout_variants takes them), with even expert
/// counts, the other kinds keeping theirs: the kinds' lists (each in expert_layout_variants'
/// order, from the kind's first stage) taken in turn, a layout of each kind per round, at most
/// `most`. Empty for a dense plan, one
/// with replicas of different tp, or one whose stages are all of one kind
/// (expert_layout_variants covers it).
std::vector<Plan> kind_expert_layout_variants(const Plan& plan, std::size_t most);

/// The layout the planner gives a stage on `devices` (replica-major, tp consecutive devices a
/// replica): of expert_layouts, the one that shards the experts the most (the largest
/// ep x expert_tp, so the least expert state per device) while every expert-parallel group lies
/// inside one node (its all-to-alls on the intra link), preferring ep over expert_tp at the
/// same sharding (Megatron-Core's MoE guidance: expert_tp 1, ep within the node). A dense model,
/// or no layout with its groups inside nodes, gets ep 1 and expert_tp = tp.
ExpertLayout choose_expert_layout(const Model& model, const Cluster& cluster, const std::vector<int>& devices, int tp);

/// ep x expert_tp of choose_expert_layout for a stage of `dp` replicas of `tp` devices on a
/// cluster whose smallest node holds `node_devices` devices, assuming its replicas fill nodes in
/// order: what the planner's quick estimate shards the experts by, asked as table(tp, dp) in its
/// inner loops. The answer depends on tp and on tp x dp modulo node_devices only, so for tp a
/// power of two (up to 2^8) a table of those holds every answer; other tp degrees (a hint's),
/// and nodes of more than kMostTableNode devices (whose table would cost more than it saves),
/// are computed. A dense model: tp.
class ExpertShardTable {
 public:
  ExpertShardTable() = default;   // as for a dense model
  ExpertShardTable(const Model& model, int node_devices);
  int operator()(int tp, int dp) const;

 private:
  static constexpr int kLevels = 9;   // tp = 1 .. 2^8
  static constexpr int kMostTableNode = 128;
  int experts_ = 0;                   // 0 for a dense model
  int node_devices_ = 1;
  std::vector<std::vector<int>> by_level_;   // [log2 tp][(tp x dp) % node_devices]
};

}  // namespace whale::plan

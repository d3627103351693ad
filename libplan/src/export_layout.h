// File: export_layout.h
// The uniform layout that Megatron-LM and DeepSpeed both describe a plan by: pipeline depth,
// virtual stages, dp and tp degrees, blocks per stage, per-rank micro-batch. Private to libplan.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "whale/plan/export.h"
#include "whale/plan/plan.h"

namespace whale::plan {

struct ExportLayout {
  int pipeline = 1;             // device groups p
  int virtual_stages = 1;       // chunks v (stages per group)
  int dp = 1;                   // of stage 0
  int tp = 1;                   // of stage 0
  int micro_batch_per_rank = 1; // samples of a micro-batch on one dp rank (share of replica 0)
  std::vector<int> blocks;      // transformer layers of each stage, in stage order
  Recompute recompute = Recompute::none;  // of stage 0
  bool shard_optimizer = false;           // of stage 0
  bool shard_gradients = false;           // of stage 0 (ZeRO-2)
  bool sequence_parallel = false;         // of stage 0
  std::vector<int> rank_devices;  // devices in rank order: tp fastest, then dp, then pipeline
  /// The precision the framework trains in: the plan's, except bf16 where a device of the plan
  /// has fp16 units but no bf16 ones (V100, T4): fp16 with dynamic loss scaling there.
  Precision precision = Precision::fp32;
  std::vector<std::string> models_without_bf16;  // the device models that made bf16 fp16, sorted
};

/// The layout of a plan, read from its stage 0 and its schedule.
ExportLayout export_layout(const Plan& plan);

/// The limits every uniform framework shares: degrees, shares, recomputation, optimizer and
/// gradient sharding and sequence parallelism that differ between stages or replicas, and a
/// listed model.
std::vector<std::string> uniform_limits(const Plan& plan, const ExportLayout& layout);

/// Whether every element equals the first.
bool all_equal(const std::vector<int>& numbers);
/// Whether the stages between the first and the last hold the same number of layers: Megatron
/// splits the transformer layers evenly, except that the first and the last pipeline stage may
/// take their own counts (--decoder-first/last-pipeline-num-layers).
bool middle_stages_even(const std::vector<int>& blocks);

/// Megatron-Core's mixture-of-experts arguments (name, value; "" for a flag) of a plan whose
/// model has experts, stage 0's ep and expert_tp among them; none for a dense model.
std::vector<std::pair<std::string, std::string>> megatron_moe_arguments(const Plan& plan);
/// DeepSpeed's own limits (export_deepspeed.cpp), besides uniform_limits.
std::vector<std::string> deepspeed_limits(const Plan& plan, const ExportLayout& layout);

/// Throws whale::Error naming the plan file and the export option and listing
/// export_limits(plan, framework), with a hint to --export-constrained, unless there are none.
void throw_if_limited(const Plan& plan, Framework framework);

/// One line for the user when the export trains in another precision than the plan
/// (ExportLayout::precision), e.g. "DeepSpeed trains bf16 as fp16 with dynamic loss scaling:
/// v100-sxm2-32gb has no bf16 units"; "" when it does not.
std::string export_precision_note(const Plan& plan, Framework framework);

/// The hint of an export that fails for a listed model, which no plan of it avoids.
extern const char* const kListedModelHint;

/// "a,b,c" of integers.
std::string join_numbers(const std::vector<int>& numbers);

}  // namespace whale::plan

// File: export.h
// Plans exported to other frameworks' launches: Megatron-LM's command-line arguments and
// DeepSpeed's ds_config.json. Each framework expresses only uniform plans; export_limits says
// what of a plan it cannot express. The mapping, argument by argument, is docs/export.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/planner.h"

namespace whale::plan {

enum class Framework { megatron, deepspeed };
/// "Megatron-LM", "DeepSpeed".
const char* to_string(Framework framework);
/// The whale-plan option that names the export file of `framework` (--export-megatron, ...).
const char* export_option(Framework framework);

/// What of `plan` the framework cannot express, one sentence each (e.g. "stage 2 has uneven
/// shares 3,1"); empty when the framework runs the plan as planned.
std::vector<std::string> export_limits(const Plan& plan, Framework framework);

/// Megatron-LM's arguments for the plan: a bash file that defines the array WHALE_MEGATRON_ARGS
/// (use: source FILE; torchrun ... pretrain_gpt.py "${WHALE_MEGATRON_ARGS[@]}" ...), with the
/// rank-to-device order in a comment. Throws whale::Error naming the plan and the limits when
/// export_limits(plan, megatron) is not empty.
std::string megatron_arguments(const Plan& plan);

/// DeepSpeed's ds_config.json for the plan (batch sizes, precision, ZeRO stage, activation
/// checkpointing, tensor and pipeline parallel sizes). Throws whale::Error naming the plan and
/// the limits when export_limits(plan, deepspeed) is not empty.
std::string deepspeed_config(const Plan& plan);

/// The export text of `framework` (megatron_arguments or deepspeed_config).
std::string export_text(const Plan& plan, Framework framework);

/// `ranked` made expressible by `framework` and estimated again, or nullopt where that needs
/// more than the settings above (stages of different dp x tp, mixed tp among replicas, a
/// micro-batch that the data-parallel ranks cannot share evenly, a wave schedule, a layer split
/// the framework cannot place, an MoE model under DeepSpeed, a listed model) or where the
/// result does not fit. What it changes:
/// - one recomputation setting for all stages: each setting a stage of `ranked` has (DeepSpeed:
///   selective read as full) is tried, the fastest that fits kept;
/// - optimizer sharding, gradient sharding and (Megatron-LM, at tp > 1) sequence parallelism
///   on in every stage where one stage has them (each keeps memory, so what fitted still does);
///   sequence parallelism off under DeepSpeed;
/// - every data-parallel rank the same share of a micro-batch;
/// - gpipe and zb-h1 pipelines run as 1f1b;
/// - the transformer layers split as the framework places them: Megatron-LM's middle stages
///   even with the first and last the rest (megatron_block_counts), interleaved and DeepSpeed
///   stages all even;
/// - Megatron-Core's one expert layout for all stages: the least sharded of the stages'.
/// Its label is `ranked`'s with the changes named. The plan of `ranked` itself is returned,
/// unchanged and not estimated again, where the framework can express it already.
std::optional<RankedPlan> expressible_variant(const RankedPlan& ranked, const CostModel& cost, Framework framework);

/// The export of the planner's best plan for `framework`, for the file `path`: its text and what
/// to print, one line naming the file and the plan's predicted throughput. Writes nothing: a
/// caller with several outputs chooses every export before writing any, so that one that fails
/// leaves no file written. When the framework cannot express the best plan: without
/// `constrained`, throws whale::Error listing why; with it, exports the fastest plan it can
/// express (by the result's objective, within its budget where it has one; the first on a tie)
/// of: the result's ranked plans, the uniform plan of every usable device (the planner's
/// baseline, searched here again among the pipeline depths the framework can split the layers
/// by where the result's cannot be expressed, or on fewer devices where none fits) and each
/// device model's uniform plan alone, each through expressible_variant; and reports, besides,
/// the limits of the best plan and both throughputs. Throws whale::Error when no expressible
/// plan fits, or for a listed model.
struct ChosenExport {
  std::string text;    // the file's content
  std::string report;  // what to print once it is written
};
ChosenExport choose_export(const PlanResult& result, const Cluster& cluster, const Model& model,
                           const CostModel& cost, const PlannerOptions& options, Framework framework,
                           bool constrained, const std::string& path);

}  // namespace whale::plan

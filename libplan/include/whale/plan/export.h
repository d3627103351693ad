// File: export.h
// Plans exported to other frameworks' launches: Megatron-LM's command-line arguments and
// DeepSpeed's ds_config.json. Each framework expresses only uniform plans; export_limits says
// what of a plan it cannot express. The mapping, argument by argument, is docs/export.md.
#pragma once

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

/// The export of the planner's best plan for `framework`, for the file `path`: its text and what
/// to print, one line naming the file and the plan's predicted throughput. Writes nothing: a
/// caller with several outputs chooses every export before writing any, so that one that fails
/// leaves no file written. When the framework cannot express the best plan: without
/// `constrained`, throws whale::Error listing why; with it, exports the best plan it can express
/// (the planner's uniform baseline, searched here, among the pipeline depths the framework can
/// split the layers by, when the result's cannot be expressed) and reports, besides, the limits
/// of the best plan and both throughputs. Throws whale::Error when no expressible plan fits either.
struct ChosenExport {
  std::string text;    // the file's content
  std::string report;  // what to print once it is written
};
ChosenExport choose_export(const PlanResult& result, const Cluster& cluster, const Model& model,
                           const CostModel& cost, const PlannerOptions& options, Framework framework,
                           bool constrained, const std::string& path);

}  // namespace whale::plan

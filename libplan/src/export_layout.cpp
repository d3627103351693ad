// File: export_layout.cpp
// The uniform layout of a plan for export, and the limits Megatron-LM and DeepSpeed share.
#include "export_layout.h"

#include <set>

#include "whale/plan/error.h"
#include "whale/plan/export.h"
#include "whale/plan/framework_precision.h"

namespace whale::plan {

const char* const kListedModelHint =
    "the frameworks build gpt, bert or llama models: plan a family model to export it";

const char* to_string(Framework framework) {
  return framework == Framework::megatron ? "Megatron-LM" : "DeepSpeed";
}

const char* export_option(Framework framework) {
  return framework == Framework::megatron ? "--export-megatron" : "--export-deepspeed";
}

std::string join_numbers(const std::vector<int>& numbers) {
  std::string out;
  for (int n : numbers) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

bool all_equal(const std::vector<int>& numbers) {
  for (int n : numbers) {
    if (n != numbers.front()) return false;
  }
  return true;
}

bool middle_stages_even(const std::vector<int>& blocks) {
  for (size_t s = 1; s + 1 < blocks.size(); ++s) {
    if (blocks[s] != blocks[1]) return false;
  }
  return true;
}

void throw_if_limited(const Plan& plan, Framework framework) {
  const std::vector<std::string> limits = export_limits(plan, framework);
  if (limits.empty()) return;
  std::string all;
  for (const std::string& limit : limits) all += (all.empty() ? "" : "; ") + limit;
  // A listed model is beyond every plan; the rest a uniform plan avoids.
  const std::string hint = plan.model.family == "listed"
                               ? kListedModelHint
                               : "--export-constrained exports the best plan within what it can express";
  throw Error(plan.source_file, export_option(framework), std::string("a plan ") + to_string(framework) + " can express, but " + all,
              hint);
}

ExportLayout export_layout(const Plan& plan) {
  ExportLayout layout;
  layout.precision = plan.precision;
  std::vector<int> used;
  for (const Stage& stage : plan.stages) used.insert(used.end(), stage.devices.begin(), stage.devices.end());
  layout.models_without_bf16 = models_trained_otherwise(plan.precision, plan.cluster, used);
  if (!layout.models_without_bf16.empty()) layout.precision = Precision::fp16;
  const Stage& first = plan.stages.front();
  layout.pipeline = plan.pipeline_groups();
  layout.virtual_stages = plan.schedule.chunks;
  layout.dp = first.dp();
  layout.tp = first.tp;
  layout.micro_batch_per_rank = first.shares.empty() ? plan.micro_batch_size : first.shares.front();
  layout.recompute = first.recompute;
  layout.shard_optimizer = first.shard_optimizer;
  layout.shard_gradients = first.shard_gradients;
  layout.sequence_parallel = first.sequence_parallel;
  for (const Stage& stage : plan.stages) {
    int blocks = 0;
    for (int l = stage.first_layer; l < stage.end_layer; ++l) {
      blocks += plan.model.layers[l].kind == LayerKind::transformer ? 1 : 0;
    }
    layout.blocks.push_back(blocks);
  }
  // Group g's devices are those of the first stage placed on it, replica-major (tp fastest).
  for (int g = 0; g < layout.pipeline; ++g) {
    for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
      if (plan.group_of_stage(s) != g) continue;
      const std::vector<int>& devices = plan.stages[s].devices;
      layout.rank_devices.insert(layout.rank_devices.end(), devices.begin(), devices.end());
      break;
    }
  }
  return layout;
}

std::string export_precision_note(const Plan& plan, Framework framework) {
  const ExportLayout layout = export_layout(plan);
  if (layout.models_without_bf16.empty()) return "";
  std::string models;
  for (const std::string& m : layout.models_without_bf16) models += (models.empty() ? "" : ", ") + m;
  return std::string(to_string(framework)) + " trains the bf16 plan as fp16 with dynamic loss scaling: " + models +
         (layout.models_without_bf16.size() == 1 ? " has" : " have") + " no bf16 units\n";
}

std::vector<std::string> uniform_limits(const Plan& plan, const ExportLayout& layout) {
  std::vector<std::string> limits;
  if (plan.model.family == "listed") {
    limits.push_back("a listed model: the frameworks build gpt, bert or llama models from their shapes");
  }
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const Stage& stage = plan.stages[s];
    const std::string name = "stage " + std::to_string(s);
    if (stage.mixed_tp()) {
      limits.push_back(name + " has replicas at tp " + join_numbers(stage.replica_tps) +
                       ": the frameworks run every data-parallel rank at one tp");
    } else if (stage.dp() != layout.dp || stage.tp != layout.tp) {
      limits.push_back(name + " has dp " + std::to_string(stage.dp()) + " x tp " + std::to_string(stage.tp) +
                       ", stage 0 dp " + std::to_string(layout.dp) + " x tp " + std::to_string(layout.tp) +
                       ": per-stage degrees must be equal");
    }
    for (int share : stage.shares) {
      if (share != stage.shares.front()) {
        limits.push_back(name + " has uneven shares " + join_numbers(stage.shares) +
                         ": every data-parallel rank takes the same micro-batch");
        break;
      }
    }
    if (stage.recompute != layout.recompute) {
      limits.push_back(name + " recomputes " + to_string(stage.recompute) + ", stage 0 " +
                       to_string(layout.recompute) + ": one recomputation setting for all stages");
    }
    if (stage.shard_gradients != layout.shard_gradients) {
      limits.push_back(name + " shards the gradients differently from stage 0: one setting for all stages");
    }
    if (stage.sequence_parallel != layout.sequence_parallel) {
      limits.push_back(name + " uses sequence parallelism differently from stage 0: one setting for all stages");
    }
    const Stage& first = plan.stages.front();
    if (plan.model.moe && (stage.ep != first.ep || stage.expert_tp_degree() != first.expert_tp_degree())) {
      limits.push_back(name + " has ep " + std::to_string(stage.ep) + " x expert_tp " + std::to_string(stage.expert_tp_degree()) +
                       ", stage 0 ep " + std::to_string(first.ep) + " x expert_tp " + std::to_string(first.expert_tp_degree()) +
                       ": one expert layout for all stages");
    }
    if (!stage.expert_counts.empty()) {
      limits.push_back(name + " has uneven expert counts " + join_numbers(stage.expert_counts) +
                       ": every expert-parallel rank holds experts / ep");
    }
    if (stage.shard_optimizer != layout.shard_optimizer) {
      limits.push_back(name + " shards the optimizer differently from stage 0: one setting for all stages");
    }
  }
  return limits;
}

std::string export_text(const Plan& plan, Framework framework) {
  return framework == Framework::megatron ? megatron_arguments(plan) : deepspeed_config(plan);
}

}  // namespace whale::plan

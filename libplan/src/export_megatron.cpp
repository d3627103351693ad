// File: export_megatron.cpp
// A plan as Megatron-LM's command-line arguments (megatron/training/arguments.py): what it
// cannot express, and the bash array of arguments. Mapping: docs/export.md.
#include <sstream>

#include "export_layout.h"
#include "yaml_writer.h"
#include "whale/plan/error.h"
#include "whale/plan/export.h"

namespace whale::plan {
namespace {

std::vector<std::string> megatron_limits(const Plan& plan, const ExportLayout& layout) {
  std::vector<std::string> limits = uniform_limits(plan, layout);
  const ScheduleKind kind = plan.schedule.kind;
  if (layout.pipeline > 1 && (kind == ScheduleKind::gpipe || kind == ScheduleKind::wave)) {
    limits.push_back(std::string("schedule ") + to_string(kind) + ": Megatron-LM runs 1f1b or interleaved-1f1b");
  }
  if (layout.pipeline > 1 && kind == ScheduleKind::zb_h1) {
    limits.push_back("schedule zb-h1: Megatron-LM runs 1f1b or interleaved-1f1b; its backward is not split into "
                     "input and weight gradient passes");
  }
  if (kind == ScheduleKind::interleaved_1f1b && layout.pipeline > 1) {
    if (!all_equal(layout.blocks)) {
      limits.push_back("interleaved stages with uneven layers " + join_numbers(layout.blocks) +
                       ": every virtual stage holds the same number of layers");
    }
    if (plan.micro_batches % layout.pipeline != 0) {
      limits.push_back(std::to_string(plan.micro_batches) + " micro-batches with interleaving: a multiple of the pipeline depth " +
                       std::to_string(layout.pipeline) + " is needed");
    }
  } else if (!middle_stages_even(layout.blocks)) {
    limits.push_back("layers per stage " + join_numbers(layout.blocks) +
                     ": only the first and the last stage may differ from the others");
  }
  return limits;
}

}  // namespace

std::string megatron_arguments(const Plan& plan) {
  throw_if_limited(plan, Framework::megatron);
  const ExportLayout layout = export_layout(plan);
  const Model& model = plan.model;
  std::ostringstream out;
  out << "# Megatron-LM arguments of a whale plan (mapping: docs/export.md).\n"
      << "# Ranks in order (tp fastest, then dp, then pipeline) run on devices "
      << format_device_list(layout.rank_devices) << ".\n"
      << "# Vocabulary " << model.vocabulary << ": set by the tokenizer arguments.\n";
  const std::string precision_note = export_precision_note(plan, Framework::megatron);
  if (!precision_note.empty()) out << "# " << precision_note;
  out << "# Use: source FILE; torchrun ... pretrain_gpt.py \"${WHALE_MEGATRON_ARGS[@]}\" <data, learning rate>\n"
      << "WHALE_MEGATRON_ARGS=(\n";
  auto arg = [&](const std::string& name, const std::string& value = "") {
    out << "  " << name << (value.empty() ? "" : " " + value) << "\n";
  };
  auto number = [&](const std::string& name, long value) { arg(name, std::to_string(value)); };
  number("--tensor-model-parallel-size", layout.tp);
  number("--pipeline-model-parallel-size", layout.pipeline);
  if (layout.virtual_stages > 1) number("--num-layers-per-virtual-pipeline-stage", layout.blocks.front());
  if (layout.virtual_stages == 1 && !all_equal(layout.blocks)) {
    number("--decoder-first-pipeline-num-layers", layout.blocks.front());
    number("--decoder-last-pipeline-num-layers", layout.blocks.back());
  }
  number("--micro-batch-size", layout.micro_batch_per_rank);
  number("--global-batch-size", plan.global_batch());
  // Under --fp16 Megatron-LM scales the loss dynamically unless --loss-scale is given.
  if (layout.precision == Precision::bf16) arg("--bf16");
  if (layout.precision == Precision::fp16) arg("--fp16");
  // Megatron-LM forces fp32 gradient accumulation and reduction under bf16; fp16 asks for it.
  if (layout.precision == Precision::fp16 && plan.framework_precision.grad_reduce == GradReducePrecision::fp32)
    arg("--accumulate-allreduce-grads-in-fp32");
  if (layout.recompute == Recompute::full) {
    arg("--recompute-granularity", "full");
    arg("--recompute-method", "uniform");
    number("--recompute-num-layers", 1);
  } else if (layout.recompute == Recompute::selective) {
    arg("--recompute-granularity", "selective");
  }
  // Megatron's distributed optimizer shards the optimizer state and reduce-scatters the
  // gradients: it expresses both ZeRO-1 and ZeRO-2 plans.
  if (layout.shard_optimizer) arg("--use-distributed-optimizer");
  if (layout.sequence_parallel) arg("--sequence-parallel");
  number("--num-layers", model.num_layers);
  number("--hidden-size", model.hidden);
  number("--ffn-hidden-size", model.ffn_hidden);
  number("--num-attention-heads", model.heads);
  // Megatron-LM's --kv-channels is the head width (default hidden / heads).
  if (model.head_dim > 0) number("--kv-channels", model.head_dim);
  number("--seq-length", model.sequence);
  number("--max-position-embeddings", model.sequence);
  // The dropouts and the optimizer the plan's memory counts (Megatron-LM's defaults are 0.1,
  // 0.1 and adam, its AdamW: a Llama planned without dropout would hold masks unplanned).
  arg("--attention-dropout", format_number(attention_dropout_of(model)));
  arg("--hidden-dropout", format_number(hidden_dropout_of(model)));
  if (model.training.optimizer == "sgd") arg("--optimizer", "sgd");
  if (model.family == "llama") {
    arg("--swiglu");
    arg("--normalization", "RMSNorm");
    arg("--disable-bias-linear");
    if (model.qkv_bias) arg("--add-qkv-bias");
    if (model.kv_heads > 0 && model.kv_heads != model.heads) {
      arg("--group-query-attention");
      number("--num-query-groups", model.kv_heads);
    }
  }
  if (model.family == "llama" || model.rope_theta > 0) {
    arg("--position-embedding-type", "rope");
    if (model.rope_theta > 0) number("--rotary-base", static_cast<long>(model.rope_theta));
  }
  if (!model.tie_embeddings) arg("--untie-embeddings-and-output-weights");
  for (const auto& [name, value] : megatron_moe_arguments(plan)) arg(name, value);
  out << ")\n";
  return out.str();
}

std::vector<std::string> export_limits(const Plan& plan, Framework framework) {
  const ExportLayout layout = export_layout(plan);
  return framework == Framework::megatron ? megatron_limits(plan, layout) : deepspeed_limits(plan, layout);
}

}  // namespace whale::plan

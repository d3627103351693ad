// File: export_deepspeed.cpp
// A plan as DeepSpeed's ds_config.json (deepspeed.ai/docs/config-json): what it cannot express,
// and the JSON. The PipelineModule takes the same stage count, partition method and checkpoint
// interval as its constructor arguments. Mapping: docs/export.md.
#include <sstream>

#include "export_layout.h"
#include "whale/plan/error.h"
#include "whale/plan/export.h"

namespace whale::plan {

std::vector<std::string> deepspeed_limits(const Plan& plan, const ExportLayout& layout) {
  std::vector<std::string> limits = uniform_limits(plan, layout);
  if (plan.model.moe) {
    limits.push_back("a mixture-of-experts model: the DeepSpeed config describes dense layers (its MoE layers are "
                     "built in the model code, deepspeed.moe)");
  }
  if (layout.pipeline > 1 && plan.schedule.kind != ScheduleKind::one_f_one_b) {
    limits.push_back(std::string("schedule ") + to_string(plan.schedule.kind) +
                     ": DeepSpeed's pipeline engine runs its own 1f1b schedule");
  }
  if (layout.pipeline > 1 && !all_equal(layout.blocks)) {
    limits.push_back("layers per stage " + join_numbers(layout.blocks) +
                     ": DeepSpeed's partition methods (uniform, parameters, type:) balance layers, they do not place boundaries");
  }
  if (layout.sequence_parallel) {
    limits.push_back("sequence parallelism: DeepSpeed's config has no Megatron-style sequence parallelism "
                     "(Megatron-DeepSpeed takes --sequence-parallel on its command line)");
  }
  if (layout.recompute == Recompute::selective) {
    limits.push_back("selective recomputation: DeepSpeed checkpoints whole layers (activation_checkpoint_interval)");
  }
  return limits;
}

std::string deepspeed_config(const Plan& plan) {
  throw_if_limited(plan, Framework::deepspeed);
  const ExportLayout layout = export_layout(plan);
  std::ostringstream out;
  out << "{\n"
      << "  \"train_batch_size\": " << plan.global_batch() << ",\n"
      << "  \"train_micro_batch_size_per_gpu\": " << layout.micro_batch_per_rank << ",\n"
      << "  \"gradient_accumulation_steps\": " << plan.micro_batches << ",\n";
  if (layout.precision == Precision::bf16) out << "  \"bf16\": {\"enabled\": true},\n";
  // loss_scale 0: dynamic loss scaling (DeepSpeed's fp16 default, written out).
  if (layout.precision == Precision::fp16) out << "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0},\n";
  // DeepSpeed reduces gradients in the training dtype unless told otherwise.
  const bool mixed = layout.precision == Precision::fp16 || layout.precision == Precision::bf16;
  if (mixed && plan.framework_precision.grad_reduce == GradReducePrecision::fp32)
    out << "  \"communication_data_type\": \"fp32\",\n";
  out << "  \"zero_optimization\": {\"stage\": " << (layout.shard_gradients ? 2 : layout.shard_optimizer ? 1 : 0) << "}";
  if (layout.tp > 1) out << ",\n  \"tensor_parallel\": {\"autotp_size\": " << layout.tp << "}";
  const bool full = layout.recompute == Recompute::full;
  if (full) {
    out << ",\n  \"activation_checkpointing\": {\"partition_activations\": false, "
        << "\"contiguous_memory_optimization\": false, \"cpu_checkpointing\": false}";
  }
  if (layout.pipeline > 1) {
    out << ",\n  \"pipeline\": {\"stages\": " << layout.pipeline << ", \"partition\": \"type:transformer\", "
        << "\"activation_checkpoint_interval\": " << (full ? 1 : 0) << "}";
  }
  out << "\n}\n";
  return out.str();
}

}  // namespace whale::plan

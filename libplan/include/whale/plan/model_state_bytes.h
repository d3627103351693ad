// File: model_state_bytes.h
// Bytes per parameter of the model state a device holds (weights, gradients, optimizer state)
// by precision, optimizer and the framework's settings: what the simulator's memory model and
// the planner's quick estimate both count.
#pragma once

#include <string>

#include "whale/plan/framework_memory.h"
#include "whale/plan/framework_precision.h"
#include "whale/plan/precision.h"

namespace whale::plan {

/// Bytes per parameter of model state. Mixed precision (fp16/bf16) Adam as Megatron:
/// weights 2 + gradients 2 + fp32 master weights, m and v 12 = 16. fp32/tf32 Adam: 4 + 4 + 8.
/// SGD (momentum) keeps one state instead of two. The framework's settings change gradients
/// (4 bytes under grad_reduce_precision fp32: Megatron's fp32 gradient accumulation) and drop
/// the master copy under master_weights none.
struct StateBytesPerParam {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double master_weights = 0;  // the fp32 master weights' part of `optimizer` (4 or 0)
};
/// Throws whale::Error for an unknown optimizer (known: adam, adamw, sgd).
StateBytesPerParam state_bytes_per_param(Precision precision, const std::string& optimizer,
                                         const FrameworkPrecision& framework = {});

/// Optimizer bytes per parameter the optimizer steps, as the framework holds them: state.optimizer,
/// plus 4 for an fp32 copy of the gradients under framework_memory.fp32_gradient_copy when the
/// gradients are held below fp32 (DeepSpeed ZeRO-1/2; framework_memory.h).
double held_optimizer_bytes_per_param(const StateBytesPerParam& state, const FrameworkMemory& framework);
/// The part of held_optimizer_bytes_per_param that a sharded optimizer (ZeRO) still holds for
/// every parameter: the fp32 master weights where framework_memory.master_weights_held_whole
/// (whale-run), else nothing.
double unsharded_optimizer_bytes_per_param(const StateBytesPerParam& state, const FrameworkMemory& framework);
/// Optimizer bytes per parameter of a stage whose optimizer state is split `shards` ways (1:
/// not sharded): the sharded part divided, the unsharded part whole.
double optimizer_bytes_per_param(double held, double unsharded, double shards);

}  // namespace whale::plan

// File: gradient_clipping.h
// Clipping by the global gradient norm as Megatron-LM's clip_grad_norm_fp32 does it: the norm
// over every trained element of the model once (tensor-parallel copies, data-parallel replicas
// and the tied token table's second copy left out), then the gradients scaled by
// max_norm / (norm + 1e-6) where that is below 1.
#pragma once

namespace whale::exec {

/// The factor the gradients are scaled by: max_norm / (norm + 1e-6) where that is below 1,
/// else 1 (also where max_norm <= 0: no clipping).
double clip_coefficient(double norm, double max_norm);

}  // namespace whale::exec

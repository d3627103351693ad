// File: dtype.h
// DType: the element types of backend tensors (fp32, bf16, fp16 floats; int32 tokens) and how
// a plan's training precision maps to the dtype that weights and activations compute in.
#pragma once

#include <cstddef>

#include "whale/plan/precision.h"

namespace whale::exec {

enum class DType { fp32, bf16, fp16, i32 };

/// Bytes of one element: 4, 2, 2, 4.
std::size_t element_bytes(DType dtype);
/// "fp32", "bf16", "fp16", "i32".
const char* dtype_name(DType dtype);
/// True for the floating-point dtypes (every dtype but i32).
bool is_float(DType dtype);

/// The dtype in which weights used in compute and activations are stored under `precision`:
/// fp32 and tf32 train in fp32 (tf32 is a GEMM mode, its operands are fp32), bf16 in bf16,
/// fp16 in fp16. Master weights, parameter gradients and optimizer state are always fp32.
DType compute_dtype(plan::Precision precision);

}  // namespace whale::exec

// File: cuda_expect_dtype.h
// The CUDA backend's check of an operand's dtype, shared by its op files.
#pragma once

#include <stdexcept>
#include <string>

#include "whale/exec/backend/tensor.h"

namespace whale::exec::cuda {

/// Throws std::invalid_argument "CUDA backend WHAT: expected DTYPE, got ..." where `view` is
/// not empty and holds another dtype.
inline void expect_dtype(ConstTensorView view, DType dtype, const char* what) {
  if (!view.empty() && view.dtype != dtype)
    throw std::invalid_argument(std::string("CUDA backend ") + what + ": expected " + dtype_name(dtype) + ", got " +
                                dtype_name(view.dtype));
}

}  // namespace whale::exec::cuda

// File: cpu_convert.h
// Private: conversion of host tensors between float dtypes (Eigen::bfloat16, Eigen::half:
// round-to-nearest-even when narrowing), and Fp32Operands, which lends an fp32 kernel fp32
// copies of operands in other dtypes and rounds its outputs back.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "whale/exec/backend/tensor.h"

namespace whale::exec::cpu {

/// dst[0, src.count) = src widened to float.
void widen(ConstTensorView src, float* dst);
/// dst = src[0, dst.count) rounded to dst.dtype.
void narrow(const float* src, TensorView dst);

/// Lends fp32 pointers for an op's operands. An fp32 view is passed through untouched (so an
/// fp32 op is exactly the fp32 kernel); other dtypes are widened into owned scratch, and output
/// scratch is rounded back into its view by finish() (or the destructor). Empty views give null.
class Fp32Operands {
 public:
  Fp32Operands() = default;
  Fp32Operands(const Fp32Operands&) = delete;
  Fp32Operands& operator=(const Fp32Operands&) = delete;
  ~Fp32Operands() { finish(); }

  /// A read-only input.
  const float* in(ConstTensorView view);
  /// An output; `accumulate` when the op reads it too (+=), so its values are widened first.
  float* out(TensorView view, bool accumulate);
  /// Rounds every output scratch back into its view; idempotent.
  void finish();

 private:
  float* scratch(std::size_t count);
  std::vector<std::unique_ptr<float[]>> scratch_;
  struct Output {
    const float* values;
    TensorView view;
  };
  std::vector<Output> outputs_;
};

}  // namespace whale::exec::cpu

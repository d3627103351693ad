// File: kernel_fixtures.h
// Helpers of the kernel host tests: seeded random tensors, the normwise relative error used as
// the tolerance measure, and bf16 rounding of a whole tensor.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "../exec/finite_differences.h"  // random_vector
#include "backend/cpu/cpu_backend.h"
#include "backend/kernel_math/float_round.h"
#include "whale/exec/backend/backend.h"

namespace whale::exec::test {

/// The reference: the fp32 CPU backend, one thread.
inline std::unique_ptr<Backend> make_reference() { return make_cpu_backend(DType::fp32, 1); }

/// Host vectors as CPU-backend tensors (its memory is host memory).
inline TensorView view(std::vector<float>& x) { return {x.data(), x.size(), DType::fp32}; }
inline ConstTensorView view(const std::vector<float>& x) { return {x.data(), x.size(), DType::fp32}; }
inline ConstTensorView view(const std::vector<int32_t>& x) { return {x.data(), x.size(), DType::i32}; }

/// max |got - want| / max |want|: the error relative to the tensor's scale (an element near
/// zero is judged against the tensor, not against itself).
inline double normwise_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

/// Every element rounded to bf16 and back (what storing a tensor in bf16 does).
inline std::vector<float> through_bf16(std::vector<float> v) {
  for (float& x : v) x = kmath::bf16_bits_to_float(kmath::float_to_bf16_bits(x));
  return v;
}

/// The fp32 tolerance of the kernels' compositions against the CPU backend (normwise).
constexpr double kFp32Tolerance = 1e-6;
/// The bf16 tolerance: inputs and outputs stored in bf16 (8 significant bits, so a rounding is
/// at most 2^-9 relative), fp32 arithmetic in between; a few roundings compound.
constexpr double kBf16Tolerance = 1.6e-2;

}  // namespace whale::exec::test

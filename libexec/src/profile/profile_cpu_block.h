// File: profile_cpu_block.h
// Private: the transformer block whose GEMMs the CPU profile times (its GEMM curve, and the
// cache walk's blocks).
#pragma once

#include <cstddef>
#include <iterator>

namespace whale::exec {

/// One linear layer of a transformer block of width h over kTokensPerWidth x h tokens: `in` and
/// `out` in units of h (qkv 1 -> 3, proj 1 -> 1, fc1 1 -> 4, fc2 4 -> 1).
struct BlockLinear {
  int in, out;
};
constexpr BlockLinear kBlockLinears[] = {{1, 3}, {1, 1}, {1, 4}, {4, 1}};
/// The GEMM products of one block: each linear's forward, input gradient and weight gradient.
constexpr std::size_t kProductsPerWidth = 3 * std::size(kBlockLinears);
constexpr int kTokensPerWidth = 2;

}  // namespace whale::exec

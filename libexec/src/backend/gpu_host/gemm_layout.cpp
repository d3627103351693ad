// File: gemm_layout.cpp
// Row-major GEMM to cuBLASLt's column-major arguments (see gemm_layout.h).
#include "backend/gpu_host/gemm_layout.h"

#include <algorithm>

namespace whale::exec::gpu {
namespace {
/// A row-major (rows, cols) matrix whose rows lie `stride` elements apart (0: cols) read as
/// column-major: (cols, rows), ld = the stride.
ColumnMajorLayout as_column_major(int rows, int cols, int stride) {
  return {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows),
          stride > 0 ? stride : cols};
}
constexpr int kVectorBytes = 16;
}  // namespace

LtGemm lt_gemm(bool trans_a, bool trans_b, int m, int n, int k, bool accumulate,
               RowStrides strides) {
  LtGemm g;
  g.trans_first = trans_b;
  g.trans_second = trans_a;
  g.m = n;
  g.n = m;
  g.k = k;
  g.first = trans_b ? as_column_major(n, k, strides.b) : as_column_major(k, n, strides.b);
  g.second = trans_a ? as_column_major(k, m, strides.a) : as_column_major(m, k, strides.a);
  g.out = as_column_major(m, n, strides.c);
  g.beta_one = accumulate;
  return g;
}

int aligned_row_elements(int row_elements, int element_bytes) {
  const int per_vector = element_bytes >= kVectorBytes ? 1 : kVectorBytes / element_bytes;
  return (row_elements + per_vector - 1) / per_vector * per_vector;
}

GemmDims padded_gemm_dims(GemmDims dims, int in_bytes, int out_bytes) {
  const auto bytes = [](int rows, int cols, int element_bytes) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * element_bytes;
  };
  const std::size_t largest = std::max({bytes(dims.m, dims.k, in_bytes), bytes(dims.k, dims.n, in_bytes),
                                        bytes(dims.m, dims.n, out_bytes)});
  if (largest < kPaddedGemmMinBytes) return dims;
  const int element_bytes = std::min(in_bytes, out_bytes);
  return {aligned_row_elements(dims.m, element_bytes), aligned_row_elements(dims.n, element_bytes),
          aligned_row_elements(dims.k, element_bytes)};
}

std::uint32_t gemm_alignment_bytes(std::uintptr_t address) {
  std::uint32_t alignment = 1;
  while (alignment < kMaxGemmAlignmentBytes && address % (alignment * 2) == 0) alignment *= 2;
  return alignment;
}

}  // namespace whale::exec::gpu

// File: gemm_layout.cpp
// Row-major GEMM to cuBLASLt's column-major arguments (see gemm_layout.h).
#include "backend/gpu_host/gemm_layout.h"

namespace whale::exec::gpu {
namespace {
/// A dense row-major (rows, cols) matrix read as column-major: (cols, rows), ld = cols.
ColumnMajorLayout as_column_major(int rows, int cols) {
  return {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows), cols};
}
}  // namespace

LtGemm lt_gemm(bool trans_a, bool trans_b, int m, int n, int k, bool accumulate) {
  LtGemm g;
  g.trans_first = trans_b;
  g.trans_second = trans_a;
  g.m = n;
  g.n = m;
  g.k = k;
  g.first = trans_b ? as_column_major(n, k) : as_column_major(k, n);
  g.second = trans_a ? as_column_major(k, m) : as_column_major(m, k);
  g.out = as_column_major(m, n);
  g.beta_one = accumulate;
  return g;
}

std::uint32_t gemm_alignment_bytes(std::uintptr_t address) {
  std::uint32_t alignment = 1;
  while (alignment < kMaxGemmAlignmentBytes && address % (alignment * 2) == 0) alignment *= 2;
  return alignment;
}

}  // namespace whale::exec::gpu

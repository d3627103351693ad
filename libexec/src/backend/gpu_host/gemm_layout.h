// File: gemm_layout.h
// The mapping of the Backend's row-major GEMM contract onto cuBLASLt's column-major one, as a
// pure host function: row-major C (m, n) = op(A) op(B) is column-major C^T (n, m) =
// op(B)^T op(A)^T, so cuBLASLt's first operand is b and its second is a.
#pragma once

#include <cstddef>
#include <cstdint>

namespace whale::exec::gpu {

/// What the GEMM fuses after the product (cuBLASLt epilogues that exist for our dtypes).
enum class GemmEpilogue {
  kNone,
  kBias,         // D += bias broadcast over rows of the row-major result (bias per column n)
  kGeluBias,     // D = GELU(AB + bias)
  kGeluAuxBias,  // as kGeluBias, and the pre-activation AB + bias saved to an aux matrix
  kDGelu,        // D = AB * GELU'(aux): the backward of kGeluAuxBias
  kBGradB,       // D = AB, and the column sums of cuBLASLt's B over its k dimension
};

/// One column-major matrix layout: rows, columns, leading dimension (cublasLtMatrixLayout).
struct ColumnMajorLayout {
  std::uint64_t rows, cols;
  std::int64_t ld;
};

/// The arguments of cublasLtMatmul for one row-major GEMM.
struct LtGemm {
  bool trans_first, trans_second;     // CUBLASLT_MATMUL_DESC_TRANSA / TRANSB
  int m, n, k;                        // cuBLASLt's (column-major) problem sizes
  ColumnMajorLayout first, second, out;  // layouts of its A (= our b), B (= our a), C and D
  bool beta_one;                      // accumulate: beta = 1, else 0
};

/// The row strides, in elements, of a, b and c as stored row-major; 0: dense (the row's length).
struct RowStrides {
  int a = 0, b = 0, c = 0;
};

/// c (m, n) = op(a) (m, k) * op(b) (k, n) [+ c]: a is (m, k) or (k, m) when trans_a; b is
/// (k, n) or (n, k) when trans_b; all row-major, each row `strides` apart (dense by default).
LtGemm lt_gemm(bool trans_a, bool trans_b, int m, int n, int k, bool accumulate,
               RowStrides strides = {});

/// Tensor cores read 16-byte vectors: a GEMM with a size that is not a whole number of vectors
/// along an operand's rows (GPT-2's 50257-entry vocabulary in bf16: the head's k in the input
/// gradient, its m in the weight gradient) gets only element-wise (align1) algorithms, several
/// times slower; a padded row stride alone does not help, as the kernel would read past the
/// size. A product whose largest matrix is at least kPaddedGemmMinBytes is run at padded sizes
/// on zero-padded copies instead (a copy moves its bytes at memory speed).
constexpr std::size_t kPaddedGemmMinBytes = std::size_t{1} << 22;  // 4 MiB
/// The row stride, in elements, that makes a row of `row_elements` 16-byte aligned; equal to
/// row_elements when it already is.
int aligned_row_elements(int row_elements, int element_bytes);

/// The sizes of a row-major c (m, n) = op(a) (m, k) op(b) (k, n).
struct GemmDims {
  int m = 0, n = 0, k = 0;
  bool operator==(const GemmDims& o) const { return m == o.m && n == o.n && k == o.k; }
};
/// The sizes to run the product at: each of m, n and k rounded up to a whole 16-byte vector of
/// the smaller element size (a and b's `in_bytes`, c's `out_bytes`) when the largest of a, b
/// and c is at least kPaddedGemmMinBytes; `dims` itself otherwise, or when all are whole.
GemmDims padded_gemm_dims(GemmDims dims, int in_bytes, int out_bytes);

/// The most alignment cuBLASLt's algorithm choice asks about (its MIN_ALIGNMENT preferences go
/// up to 256 bytes, the alignment of cudaMalloc's blocks).
constexpr std::uint32_t kMaxGemmAlignmentBytes = 256;

/// The alignment of `address` in bytes that cuBLASLt's heuristic is told (the
/// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES preferences): the largest power of two that
/// divides it, at most kMaxGemmAlignmentBytes; kMaxGemmAlignmentBytes for a null address. A
/// view at an offset into a tensor (a tiny bf16 model's weights at 128-byte offsets) must not
/// get an algorithm chosen for 256-byte pointers, so the algorithm cache keys on it too.
std::uint32_t gemm_alignment_bytes(std::uintptr_t address);

}  // namespace whale::exec::gpu

// File: test_gemm_arena.cpp
// The row-major -> cuBLASLt column-major GEMM mapping (exact descriptors), the operand
// alignment its algorithm choice keys on, and the device memory arena: its size from the
// predicted peak and its fit in free memory, and its sub-allocator (offsets, alignment,
// coalescing, peak).
#include <doctest/doctest.h>

#include <stdexcept>

#include "backend/gpu_host/arena_layout.h"
#include "backend/gpu_host/arena_size.h"
#include "backend/gpu_host/gemm_layout.h"

using namespace whale::exec::gpu;

namespace {
void check_layout(const ColumnMajorLayout& l, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  CHECK(l.rows == rows);
  CHECK(l.cols == cols);
  CHECK(l.ld == ld);
}
}  // namespace

TEST_CASE("GEMM mapping: c (2, 3) = a (2, 4) b (4, 3), no transposes") {
  const LtGemm g = lt_gemm(false, false, 2, 3, 4, false);
  CHECK(g.m == 3);  // cuBLASLt computes c^T (3, 2) = b^T a^T
  CHECK(g.n == 2);
  CHECK(g.k == 4);
  CHECK_FALSE(g.trans_first);
  CHECK_FALSE(g.trans_second);
  check_layout(g.first, 3, 4, 3);   // b (4, 3) row-major is (3, 4) column-major
  check_layout(g.second, 4, 2, 4);  // a (2, 4) row-major is (4, 2) column-major
  check_layout(g.out, 3, 2, 3);
  CHECK_FALSE(g.beta_one);
}

TEST_CASE("GEMM mapping: linear forward out (N, OC) = inp (N, C) weight (OC, C)^T") {
  const LtGemm g = lt_gemm(false, true, 6, 5, 4, false);
  CHECK(g.trans_first);  // weight is read transposed
  CHECK_FALSE(g.trans_second);
  check_layout(g.first, 4, 5, 4);   // weight (5, 4) row-major is (4, 5) column-major
  check_layout(g.second, 4, 6, 4);  // inp (6, 4)
  check_layout(g.out, 5, 6, 5);
}

TEST_CASE("GEMM mapping: weight gradient dW (OC, C) += dout (N, OC)^T inp (N, C)") {
  const LtGemm g = lt_gemm(true, false, 5, 4, 6, true);
  CHECK_FALSE(g.trans_first);
  CHECK(g.trans_second);
  CHECK(g.m == 4);
  CHECK(g.n == 5);
  CHECK(g.k == 6);
  check_layout(g.first, 4, 6, 4);   // inp (6, 4)
  check_layout(g.second, 5, 6, 5);  // dout (6, 5)
  check_layout(g.out, 4, 5, 4);
  CHECK(g.beta_one);
}

TEST_CASE("GEMM mapping: both transposed") {
  const LtGemm g = lt_gemm(true, true, 2, 3, 4, false);
  CHECK(g.trans_first);
  CHECK(g.trans_second);
  check_layout(g.first, 4, 3, 4);   // b (3, 4)
  check_layout(g.second, 2, 4, 2);  // a (4, 2)
}

TEST_CASE("GEMM mapping: row strides set the leading dimensions (a logits matrix padded to 16 bytes)") {
  // linear forward of the LM head: logits (6, 5) = x (6, 4) W (5, 4)^T with logits rows 8 apart
  const LtGemm forward = lt_gemm(false, true, 6, 5, 4, false, RowStrides{0, 0, 8});
  check_layout(forward.first, 4, 5, 4);   // W dense
  check_layout(forward.second, 4, 6, 4);  // x dense
  check_layout(forward.out, 5, 6, 8);     // logits: 5 valid entries of 8 per row
  // dW (5, 4) += dlogits (6, 5)^T x (6, 4): dlogits read transposed, its rows 8 apart
  const LtGemm weight = lt_gemm(true, false, 5, 4, 6, true, RowStrides{8, 0, 0});
  check_layout(weight.second, 5, 6, 8);
  check_layout(weight.first, 4, 6, 4);
  check_layout(weight.out, 4, 5, 4);
}

TEST_CASE("GEMM padding: sizes rounded up to 16 bytes, only for products with a matrix of 4 MiB or more") {
  CHECK(aligned_row_elements(50257, 2) == 50264);  // bf16: 8 elements a vector
  CHECK(aligned_row_elements(50257, 4) == 50260);  // fp32: 4
  CHECK(aligned_row_elements(768, 2) == 768);
  CHECK(aligned_row_elements(3, 16) == 3);
  // GPT-2's head in bf16 over 8 x 1024 tokens (logits 823 MB): the forward's n, the input
  // gradient's k and the weight gradient's m go from 50257 to 50264; the rest stay
  CHECK(padded_gemm_dims({8192, 50257, 768}, 2, 2) == GemmDims{8192, 50264, 768});
  CHECK(padded_gemm_dims({8192, 768, 50257}, 2, 2) == GemmDims{8192, 768, 50264});
  CHECK(padded_gemm_dims({50257, 768, 8192}, 2, 4) == GemmDims{50264, 768, 8192});  // fp32 gradient
  // fp32 in and out: 4 elements a vector
  CHECK(padded_gemm_dims({8192, 50257, 768}, 4, 4) == GemmDims{8192, 50260, 768});
  // whole sizes stay; a product whose largest matrix is under 4 MiB is not worth the copies:
  // 41 x 50257 x 2 B = 4,121,074 B, while 42 rows make 4,221,588 B >= 4,194,304
  CHECK(padded_gemm_dims({8192, 50264, 768}, 2, 2) == GemmDims{8192, 50264, 768});
  CHECK(padded_gemm_dims({41, 50257, 1}, 2, 2) == GemmDims{41, 50257, 1});
  CHECK(padded_gemm_dims({42, 50257, 1}, 2, 2) == GemmDims{48, 50264, 8});
}

TEST_CASE("GEMM alignment: the largest power of two dividing the address, at most 256") {
  CHECK(gemm_alignment_bytes(0) == 256);
  CHECK(gemm_alignment_bytes(0x7f0000001000) == 256);
  CHECK(gemm_alignment_bytes(0x7f0000001200) == 256);
  // A bf16 weight 64 elements into an arena block: 128 bytes past a 256-byte boundary.
  CHECK(gemm_alignment_bytes(0x7f0000001000 + 64 * 2) == 128);
  CHECK(gemm_alignment_bytes(0x1010) == 16);
  CHECK(gemm_alignment_bytes(0x1002) == 2);
  CHECK(gemm_alignment_bytes(0x1001) == 1);
}

TEST_CASE("arena size: the predicted peak plus 25% and 2 GiB, in 2 MiB steps, never all free memory") {
  constexpr std::size_t MiB = std::size_t{1} << 20, GiB = std::size_t{1} << 30;
  CHECK(arena_bytes_for_peak(0) == 2 * GiB);
  CHECK(arena_bytes_for_peak(static_cast<double>(GiB)) == 2 * GiB + GiB + GiB / 4);
  CHECK(arena_bytes_for_peak(1) == 2 * GiB + 2 * MiB);  // 2 bytes round up to one granule
  CHECK(arena_bytes_for_peak(40.0 * GiB) == 52 * GiB);
  CHECK(arena_shortfall(2 * GiB, 4 * GiB) == "");      // exactly the arena and the reserve
  CHECK(arena_shortfall(2 * GiB, 4 * GiB - MiB) ==
        "2.00 GiB of arena + 2.00 GiB reserve, but 4.00 GiB free");
  CHECK(arena_shortfall(52 * GiB, 30 * GiB) ==
        "52.00 GiB of arena + 2.00 GiB reserve, but 30.00 GiB free");
}

TEST_CASE("arena: aligned first-fit, coalescing on release, peak tracked") {
  ArenaLayout arena(4096 + 100, 256);
  CHECK(arena.capacity_bytes() == 4096u);
  const std::size_t a = arena.allocate(100);   // 256
  const std::size_t b = arena.allocate(257);   // 512
  const std::size_t c = arena.allocate(0);     // 256
  CHECK(a == 0u);
  CHECK(b == 256u);
  CHECK(c == 768u);
  CHECK(arena.block_bytes(b) == 512u);
  CHECK(arena.used_bytes() == 1024u);
  arena.release(a);
  arena.release(b);  // coalesces with a's hole: 768 free bytes at 0
  CHECK(arena.allocate(768) == 0u);
  CHECK(arena.peak_bytes() == 1024u);
  CHECK(arena.allocate(3072) == 1024u);  // exactly the rest
  CHECK(arena.peak_bytes() == 4096u);
  CHECK_THROWS_AS(arena.allocate(1), std::runtime_error);
  arena.release(c);
  CHECK(arena.used_bytes() == 3840u);
  CHECK(arena.live_blocks() == 2u);
  CHECK_THROWS_AS(arena.release(c), std::invalid_argument);
  CHECK_THROWS_AS(ArenaLayout(1024, 100), std::invalid_argument);
}

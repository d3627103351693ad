// File: test_float_round.cpp
// fp32 -> bf16 / fp16 round-to-nearest-even and back, bit-exact on hand-picked values (ties,
// subnormals, NaN, infinities, the largest finite values); with CUDA, also against CUDA's own
// host implementations of __float2bfloat16_rn / __float2half_rn over a sweep of bit patterns;
// a double split into a float and its remainder.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "backend/kernel_math/float_round.h"

#if defined(WHALE_HAVE_CUDA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

using namespace whale::exec::kmath;

namespace {
uint16_t bf16(uint32_t bits) { return float_to_bf16_bits(bits_float(bits)); }
uint16_t fp16(uint32_t bits) { return float_to_fp16_bits(bits_float(bits)); }
}  // namespace

TEST_CASE("fp32 -> bf16: ties to even, NaN canonical, overflow to infinity") {
  CHECK(bf16(0x3F800000u) == 0x3F80u);  // 1
  CHECK(bf16(0x3F808000u) == 0x3F80u);  // tie, even stays
  CHECK(bf16(0x3F818000u) == 0x3F82u);  // tie, odd rounds up
  CHECK(bf16(0x3F808001u) == 0x3F81u);  // above half
  CHECK(bf16(0x3F807FFFu) == 0x3F80u);  // below half
  CHECK(bf16(0x7FC00000u) == 0x7FFFu);  // NaN
  CHECK(bf16(0xFFC00001u) == 0x7FFFu);  // negative NaN
  CHECK(bf16(0x7F800000u) == 0x7F80u);  // +inf
  CHECK(bf16(0xFF800000u) == 0xFF80u);  // -inf
  CHECK(bf16(0x7F7FFFFFu) == 0x7F80u);  // FLT_MAX rounds to infinity
  CHECK(bf16(0x7F7F0000u) == 0x7F7Fu);  // the largest finite bf16
  CHECK(bf16(0x00000001u) == 0x0000u);  // the least float subnormal
  CHECK(bf16(0x00018000u) == 0x0002u);  // subnormal tie, odd rounds up
  CHECK(bf16(0x80000000u) == 0x8000u);  // -0
}

TEST_CASE("bf16 -> fp32 is exact") {
  CHECK(bf16_bits_to_float(0x3F80u) == 1.0f);
  CHECK(bf16_bits_to_float(0xC040u) == -3.0f);
  CHECK(bf16_bits_to_float(0x0001u) == bits_float(0x00010000u));
  CHECK(std::isinf(bf16_bits_to_float(0x7F80u)));
  CHECK(std::isnan(bf16_bits_to_float(0x7FFFu)));
}

TEST_CASE("fp32 -> fp16: ties to even, subnormals, NaN canonical, overflow to infinity") {
  CHECK(fp16(0x3F800000u) == 0x3C00u);  // 1
  CHECK(fp16(0x3F801000u) == 0x3C00u);  // 1 + 2^-11: tie, even stays
  CHECK(fp16(0x3F803000u) == 0x3C02u);  // 1 + 3 2^-11: tie, odd rounds up
  CHECK(fp16(0xC0000000u) == 0xC000u);  // -2
  CHECK(fp16(0x477FE000u) == 0x7BFFu);  // 65504, the largest finite half
  CHECK(fp16(0x477FEFFFu) == 0x7BFFu);  // just below the midpoint to 65536
  CHECK(fp16(0x477FF000u) == 0x7C00u);  // 65520 rounds to infinity
  CHECK(fp16(0x7F7FFFFFu) == 0x7C00u);  // FLT_MAX
  CHECK(fp16(0xFF800000u) == 0xFC00u);  // -inf
  CHECK(fp16(0x7FC00000u) == 0x7FFFu);  // NaN
  CHECK(fp16(0x38800000u) == 0x0400u);  // 2^-14, the least normal half
  CHECK(fp16(0x33800000u) == 0x0001u);  // 2^-24, the least subnormal half
  CHECK(fp16(0x33000000u) == 0x0000u);  // 2^-25: tie between 0 and 2^-24, even is 0
  CHECK(fp16(0x33000001u) == 0x0001u);  // just above that tie
  CHECK(fp16(0x33C00000u) == 0x0002u);  // 1.5 2^-24: tie, odd rounds up
  CHECK(fp16(0x80000000u) == 0x8000u);  // -0
}

TEST_CASE("fp16 -> fp32 is exact, subnormals included") {
  CHECK(fp16_bits_to_float(0x3C00u) == 1.0f);
  CHECK(fp16_bits_to_float(0x0001u) == std::ldexp(1.0f, -24));
  CHECK(fp16_bits_to_float(0x03FFu) == std::ldexp(1023.0f, -24));
  CHECK(fp16_bits_to_float(0x7BFFu) == 65504.0f);
  CHECK(fp16_bits_to_float(0x8000u) == 0.0f);
  CHECK(std::signbit(fp16_bits_to_float(0x8000u)));
  CHECK(std::isinf(fp16_bits_to_float(0x7C00u)));
  CHECK(std::isnan(fp16_bits_to_float(0x7E00u)));
  for (uint32_t h = 0; h < 0x7C00u; ++h)  // every finite half survives the round trip
    REQUIRE(float_to_fp16_bits(fp16_bits_to_float(static_cast<uint16_t>(h))) == h);
}

TEST_CASE("split_double: a float and its remainder that sum to the double") {
  float hi = 0, lo = 0;
  split_double(1.0 + 0x1p-40, &hi, &lo);  // below float's precision at 1: all in the remainder
  CHECK(hi == 1.0f);
  CHECK(lo == 0x1p-40f);
  split_double(0.1, &hi, &lo);
  CHECK(hi == 0.1f);
  CHECK(static_cast<double>(hi) + lo == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(static_cast<double>(hi) + lo != static_cast<double>(0.1f));
}

#if defined(WHALE_HAVE_CUDA)
TEST_CASE("roundings equal CUDA's __float2bfloat16_rn and __float2half_rn bit for bit") {
  int checked = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 65521) {  // a prime stride
    const float x = bits_float(static_cast<uint32_t>(bits));
    const __nv_bfloat16_raw b = __float2bfloat16_rn(x);
    const __half_raw h = __float2half_rn(x);
    REQUIRE(float_to_bf16_bits(x) == b.x);
    REQUIRE(float_to_fp16_bits(x) == h.x);
    ++checked;
  }
  CHECK(checked == 65552);
}
#endif

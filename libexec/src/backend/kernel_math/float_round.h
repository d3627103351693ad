// File: float_round.h
// fp32 <-> bf16 and fp32 <-> fp16 conversions on raw 16-bit patterns, round-to-nearest-even,
// bit-exact with CUDA's __float2bfloat16_rn / __float2half_rn (NaN becomes the canonical
// 0x7fff; values past the largest finite number round to infinity) and their inverses; a
// double split into two floats.
#pragma once

#include <stdint.h>
#include <string.h>

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

WHALE_HOST_DEVICE uint32_t float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

WHALE_HOST_DEVICE float bits_float(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/// Rounds `truncated` up when the dropped `remainder` (left-aligned in 32 bits) is above half,
/// or exactly half and `truncated` odd: round-to-nearest-even.
WHALE_HOST_DEVICE uint16_t round_nearest_even(uint32_t truncated, uint32_t remainder) {
  const bool up = remainder > 0x80000000u || (remainder == 0x80000000u && (truncated & 1u));
  return static_cast<uint16_t>(truncated + (up ? 1u : 0u));
}

/// The bf16 bits nearest to x.
WHALE_HOST_DEVICE uint16_t float_to_bf16_bits(float x) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // NaN
  return round_nearest_even(u >> 16, u << 16);
}

WHALE_HOST_DEVICE float bf16_bits_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

/// The fp16 bits nearest to x (subnormal halves included).
WHALE_HOST_DEVICE uint16_t float_to_fp16_bits(float x) {
  const uint32_t bits = float_bits(x);
  const uint32_t u = bits & 0x7fffffffu;
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if (u >= 0x7f800000u) return static_cast<uint16_t>(u == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu);
  if (u > 0x477fefffu) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (u >= 0x38800000u)                                               // normal half
    return round_nearest_even(sign | ((u - 0x38000000u) >> 13), u << 19);
  if (u < 0x33000001u) return static_cast<uint16_t>(sign);  // at most half the least subnormal
  const uint32_t shift = 0x7eu - (u >> 23);                 // 14..24
  const uint32_t mantissa = (u & 0x7fffffu) | 0x800000u;
  return round_nearest_even(sign | (mantissa >> shift), mantissa << (32u - shift));
}

WHALE_HOST_DEVICE float fp16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);
  // Subnormal half: mantissa * 2^-24, exact in fp32.
  int e = 113;
  while (!(mantissa & 0x400u)) {
    mantissa <<= 1;
    --e;
  }
  return bits_float(sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3ffu) << 13));
}

/// Splits `value` into a float and the float of its remainder, whose sum in double is `value`
/// to about 1e-14 relative.
WHALE_HOST_DEVICE void split_double(double value, float* hi, float* lo) {
  *hi = static_cast<float>(value);
  *lo = static_cast<float>(value - static_cast<double>(*hi));
}

}  // namespace whale::exec::kmath

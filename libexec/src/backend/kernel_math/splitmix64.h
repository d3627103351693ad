// File: splitmix64.h
// splitmix64's finaliser for host and device code: the counter-based hash behind parameter
// initialisation, data sampling and dropout masks. Fixed forever: changing it changes initial
// weights, sampled batches, masks and checkpoint validity.
#pragma once

#include <stdint.h>

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// splitmix64's finaliser of x + golden ratio: a bijective, well-mixed 64-bit hash.
WHALE_HOST_DEVICE uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace whale::exec::kmath

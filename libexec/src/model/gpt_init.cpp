// File: gpt_init.cpp
// Deterministic parameter initialisation: a counter-based hash (splitmix64) of (seed, name,
// element index) gives two uniforms, Box-Muller turns them into N(0, 1). Nothing depends on
// the parallel layout, so every plan starts from bit-identical full tensors.
#include <cmath>

#include "model/gpt_parameters.h"
#include "util/hashing.h"

namespace whale::exec::gpt {
namespace {

/// A uniform in (0, 1) from 53 bits of the hash.
double unit_interval(uint64_t bits) { return ((bits >> 11) + 0.5) * 0x1.0p-53; }

}  // namespace

void initialize_full(const ParameterSpec& spec, uint64_t seed, float* full) {
  const std::size_t count = spec.rows * spec.cols;
  if (spec.init != Init::normal) {
    const float value = spec.init == Init::ones ? 1.0f : 0.0f;
    for (std::size_t e = 0; e < count; ++e) full[e] = value;
    return;
  }
  const uint64_t stream = splitmix64(seed ^ splitmix64(fnv1a(spec.name)));
  const double two_pi = 6.283185307179586;
  for (std::size_t e = 0; e < count; ++e) {
    const uint64_t h1 = splitmix64(stream + 2 * e);
    const uint64_t h2 = splitmix64(stream + 2 * e + 1);
    const double z = std::sqrt(-2.0 * std::log(unit_interval(h1))) *
                     std::cos(two_pi * unit_interval(h2));
    full[e] = static_cast<float>(spec.stddev * z);
  }
}

}  // namespace whale::exec::gpt

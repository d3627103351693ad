// File: gpt_init.cpp
// Deterministic parameter initialisation: a counter-based hash (splitmix64) of (seed, name,
// element index) gives two uniforms, Box-Muller turns them into N(0, 1). Nothing depends on
// the parallel layout, so every plan starts from bit-identical full tensors. Large tensors are
// filled by several threads over contiguous ranges: each element depends on its index alone, so
// the values do not depend on the thread count (a 1.3B-parameter model took about 50 s on one
// thread).
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "model/gpt_parameters.h"
#include "util/hashing.h"

namespace whale::exec::gpt {
namespace {

/// A uniform in (0, 1) from 53 bits of the hash.
double unit_interval(uint64_t bits) { return ((bits >> 11) + 0.5) * 0x1.0p-53; }

/// Elements a thread fills at least: below this a thread costs more than it saves.
constexpr std::size_t kElementsPerThread = std::size_t{1} << 20;

/// The threads that fill `count` elements: at most `available`, at most one per
/// kElementsPerThread elements, at least 1.
int fill_threads(std::size_t count, int available) {
  const std::size_t useful = std::max<std::size_t>(1, count / kElementsPerThread);
  return static_cast<int>(std::clamp<std::size_t>(useful, 1, std::max(available, 1)));
}

/// fill(begin, end) over [0, count) in `fill_threads` contiguous ranges, the first on the caller.
template <class Fill>
void parallel_fill(std::size_t count, int available, const Fill& fill) {
  const int threads = fill_threads(count, available);
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t)
    workers.emplace_back([&, t] { fill(count * t / threads, count * (t + 1) / threads); });
  fill(0, count / threads);
  for (std::thread& w : workers) w.join();
}

}  // namespace

void initialize_full(const ParameterSpec& spec, uint64_t seed, float* full, int threads) {
  const std::size_t count = spec.rows * spec.cols;
  if (spec.init != Init::normal) {
    const float value = spec.init == Init::ones ? 1.0f : 0.0f;
    for (std::size_t e = 0; e < count; ++e) full[e] = value;
    return;
  }
  const uint64_t stream = splitmix64(seed ^ splitmix64(fnv1a(spec.name)));
  const double two_pi = 6.283185307179586;
  parallel_fill(count, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) {
      const uint64_t h1 = splitmix64(stream + 2 * e);
      const uint64_t h2 = splitmix64(stream + 2 * e + 1);
      const double z = std::sqrt(-2.0 * std::log(unit_interval(h1))) *
                       std::cos(two_pi * unit_interval(h2));
      full[e] = static_cast<float>(spec.stddev * z);
    }
  });
}

}  // namespace whale::exec::gpt

// File: profile_cpu_cache_walk.cpp
// The cache walk: GEMM blocks walked forward and back as a training step walks its layers, at
// working sets around the cache, against the block's cold and warm seconds.
#include "whale/exec/profile/profile_cpu_cache_walk.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "profile/profile_cpu_block.h"
#include "profile/profile_text.h"
#include "whale/plan/units.h"

namespace whale::exec {
namespace {

// The most bytes a walk touches: the walks stay within a quick profile's seconds on caches of
// hundreds of MiB per device.
constexpr Bytes kMostWalkBytes = 1024 * kBytesPerMiB;

// One block of the walk: per linear its weight (out x in), weight gradient and saved input
// (tokens x in), fp32.
struct WalkBlock {
  std::vector<Tensor> weights, gradients, inputs;
};

std::size_t weight_count(const BlockLinear& linear, int h) {
  return static_cast<std::size_t>(linear.in) * h * linear.out * h;
}

std::size_t input_count(const BlockLinear& linear, int h) {
  return static_cast<std::size_t>(kTokensPerWidth) * h * linear.in * h;
}

Bytes block_bytes(int h) {
  std::size_t floats = 0;
  for (const BlockLinear& linear : kBlockLinears) floats += 2 * weight_count(linear, h) + input_count(linear, h);
  return static_cast<Bytes>(floats) * sizeof(float);
}

}  // namespace

std::vector<int> cache_walk_block_counts(Bytes cache_bytes, Bytes block_bytes, bool quick) {
  std::vector<int> counts;
  const int most = std::max(1, static_cast<int>(kMostWalkBytes / block_bytes));
  for (double share = quick ? 0.25 : 0.125; share <= 4.0 + 1e-9; share *= 2) {
    counts.push_back(std::clamp(static_cast<int>(std::lround(share * cache_bytes / block_bytes)), 1, most));
  }
  return counts;
}

std::vector<double> cache_walk_warm_fractions(const std::vector<Seconds>& walk_s_per_block, Seconds cold_block_s,
                                              Seconds warm_block_s) {
  if (!(warm_block_s > 0) || cold_block_s < 1.05 * warm_block_s) return {};
  std::vector<double> fractions;
  for (Seconds walk : walk_s_per_block) {
    const double f = std::clamp((cold_block_s - walk) / (cold_block_s - warm_block_s), 0.0, 1.0);
    fractions.push_back(fractions.empty() ? f : std::min(f, fractions.back()));
  }
  return fractions;
}

plan::EfficiencyCurve measure_warm_fraction_by_working_set(Backend& backend, Bytes cache_bytes, Seconds cold_block_s,
                                                           Seconds warm_block_s, bool quick, const TimerOptions& timer,
                                                           const ProgressFn& progress) {
  const int h = kCacheWalkWidth, m = kTokensPerWidth * kCacheWalkWidth;
  const Bytes one_block = block_bytes(h);
  const std::vector<int> counts = cache_walk_block_counts(cache_bytes, one_block, quick);
  std::vector<std::unique_ptr<WalkBlock>> blocks;
  // The output gradient and the products' outputs: written by the op before, so hot in a step.
  std::size_t widest = 0;
  for (const BlockLinear& linear : kBlockLinears) widest = std::max(widest, static_cast<std::size_t>(std::max(linear.in, linear.out)) * h);
  Tensor dy(backend, m * widest, DType::fp32), out(backend, m * widest, DType::fp32);
  const auto walk = [&](int n) {
    for (int b = 0; b < n; ++b) {
      WalkBlock& block = *blocks[b];
      for (std::size_t j = 0; j < std::size(kBlockLinears); ++j) {
        const int k = kBlockLinears[j].in * h, o = kBlockLinears[j].out * h;
        backend.matmul(false, true, m, o, k, block.inputs[j].view(), block.weights[j].view(), out.view(), false);
      }
    }
    for (int b = n - 1; b >= 0; --b) {
      WalkBlock& block = *blocks[b];
      for (std::size_t j = std::size(kBlockLinears); j-- > 0;) {
        const int k = kBlockLinears[j].in * h, o = kBlockLinears[j].out * h;
        backend.matmul(false, false, m, k, o, dy.view(), block.weights[j].view(), out.view(), false);
        backend.matmul(true, false, o, k, m, dy.view(), block.inputs[j].view(), block.gradients[j].view(), true);
      }
    }
  };
  std::vector<Seconds> per_block_s;
  std::string points;
  for (int n : counts) {
    while (static_cast<int>(blocks.size()) < n) {
      auto block = std::make_unique<WalkBlock>();
      for (const BlockLinear& linear : kBlockLinears) {
        block->weights.emplace_back(backend, weight_count(linear, h), DType::fp32);
        block->gradients.emplace_back(backend, weight_count(linear, h), DType::fp32);
        block->inputs.emplace_back(backend, input_count(linear, h), DType::fp32);
      }
      blocks.push_back(std::move(block));
    }
    per_block_s.push_back(median_call_time_s([&] { walk(n); }, timer) / n);
    points += format(" %.1f:%.3f", n * one_block / kBytesPerMiB, per_block_s.back() * 1e3);
  }
  const std::vector<double> fractions = cache_walk_warm_fractions(per_block_s, cold_block_s, warm_block_s);
  progress(format("cache walk: blocks of width %.0f, cold %.3f ms, warm %.3f ms a block; walked MiB:ms a block", h,
                  cold_block_s * 1e3, warm_block_s * 1e3) +
           points);
  if (fractions.empty()) {
    progress("cache walk: cold and warm within 5%: libsim's fixed ramp stands in");
    return {};
  }
  std::vector<plan::EfficiencyPoint> curve;
  std::string shown;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (i > 0 && counts[i] == counts[i - 1]) continue;   // the same walk timed again
    curve.push_back({counts[i] * one_block, fractions[i]});
    shown += format(" %.1f:%.2f", counts[i] * one_block / kBytesPerMiB, fractions[i]);
  }
  progress("cache walk: warm fraction by working set MiB:fraction" + shown);
  return plan::EfficiencyCurve(std::move(curve));
}

}  // namespace whale::exec

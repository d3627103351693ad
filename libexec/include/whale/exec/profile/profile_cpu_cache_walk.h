// File: profile_cpu_cache_walk.h
// How warm a training step's GEMMs run on a CPU core, by the working set it walks.
// libsim prices a device's ops between the profile's cold and warm figures by its working set
// (cache_working_set.h); how fast the share that hits the cache falls off as the working set
// outgrows the cache depends on the machine (its replacement policy, prefetchers, the memory
// behind the cache), so whale-profile measures it.
#pragma once

#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/profile/profile_device_prober.h"
#include "whale/exec/profile/profile_timer.h"
#include "whale/plan/device_profile.h"

namespace whale::exec {

/// The width of the transformer blocks the walk runs (over 2 x width tokens); the profile's GEMM
/// curve times the same block (its cold and warm seconds are the walk's references).
constexpr int kCacheWalkWidth = 128;

/// The block counts walked for a cache of `cache_bytes` per device and blocks of `block_bytes`:
/// working sets of 1/8 to 4 (quick: 1/4 to 4) times the cache, doubling, each rounded to whole
/// blocks (at least 1, at most what 1 GiB holds), so non-decreasing. As many counts whatever the
/// cache: under --lockstep every core times as many walks (a barrier before each sample).
std::vector<int> cache_walk_block_counts(Bytes cache_bytes, Bytes block_bytes, bool quick);

/// The warm fraction each walk implies: (cold - walk) / (cold - warm) per block, clamped to
/// [0, 1] and made non-increasing in the working set (a larger walk never runs warmer: a rise
/// is noise). `walk_s_per_block`: the walks' seconds per block, by increasing working set.
/// Empty where warm is not at least 5% faster than cold (the two figures cannot be told apart).
std::vector<double> cache_walk_warm_fractions(const std::vector<Seconds>& walk_s_per_block, Seconds cold_block_s,
                                              Seconds warm_block_s);

/// Walks blocks of width kCacheWalkWidth as a training step walks its layers, forward through
/// blocks 0..n-1 (each linear's product x W^T) and back through n-1..0 (dy W, then dW += dy^T x),
/// each block holding its own weights, weight gradients and saved inputs, for each count of
/// cache_walk_block_counts; a walk's working set is its blocks' bytes. Returns the curve of
/// warm fraction by working set (cache_walk_warm_fractions against the block's cold and warm
/// seconds of the GEMM curve, `cold_block_s` and `warm_block_s`; one point per distinct count),
/// empty where those cannot be told apart. `timer`: its in_step makes the cores walk together
/// under --lockstep.
plan::EfficiencyCurve measure_warm_fraction_by_working_set(Backend& backend, Bytes cache_bytes, Seconds cold_block_s,
                                                           Seconds warm_block_s, bool quick, const TimerOptions& timer,
                                                           const ProgressFn& progress);

}  // namespace whale::exec

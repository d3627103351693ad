// File: limits.h
// The largest counts whale accepts, checked when a file or a command line is read, so that an
// absurd number is an error with the limit in its message rather than a hang or an overflow.
// docs/limits.md lists them with their reasons.
#pragma once

#include <cstdint>

namespace whale::plan {

/// Devices in a cluster (all nodes together); the largest training clusters today have some
/// tens of thousands of GPUs, and the planner's search is quadratic in the device count.
inline constexpr int64_t kMaxDevices = 65536;
/// Nodes in a cluster.
inline constexpr int64_t kMaxNodes = 65536;
/// Layers of a model (generated or listed); the deepest published transformers have a few
/// hundred (DeepNet's 1,000 at most). The planner's layout search holds a table of range costs
/// per group role, quadratic in the layers: at 1,000 layers a search takes about 20 s and 1 GiB,
/// at 10,000 it would need tens of GiB.
inline constexpr int64_t kMaxLayers = 1024;
/// Samples in one global batch.
inline constexpr int64_t kMaxGlobalBatch = 1 << 24;
/// Micro-batches in one step (the schedule programs hold one instruction per micro-batch,
/// stage and device).
inline constexpr int64_t kMaxMicroBatches = 1 << 16;
/// A model's hidden size, its sequence length and its vocabulary: each at most this, so that
/// derived sizes (4 x hidden, hidden x vocabulary) stay far inside 64-bit integers.
inline constexpr int64_t kMaxModelDimension = 1 << 24;
/// A device's memory in GiB, and any single bandwidth or FLOP rate stays finite and below
/// these (a profile with more is a typo, not a device).
inline constexpr double kMaxMemoryGib = 1 << 20;
/// A data-parallel gradient bucket in MiB (1 TiB): larger than any device's memory, so more is
/// a typo (frameworks use tens of MiB).
inline constexpr double kMaxGradientBucketMib = 1 << 20;
/// A device's price in USD per hour (the dearest cloud GPU lists at tens of dollars an hour):
/// more is a typo.
inline constexpr double kMaxPricePerHourUsd = 10000;
/// A link's bandwidth in Gb/s, per device or per node: from 1 Mb/s to 1 Pb/s (NVLink 4 gives
/// 7,200 Gb/s per GPU, 10 GbE 10); outside it a value is a typo in its unit.
inline constexpr double kMinLinkGbps = 1e-3;
inline constexpr double kMaxLinkGbps = 1e6;
/// A link's latency in microseconds: at most a second (networks take microseconds, a WAN
/// tens of milliseconds).
inline constexpr double kMaxLinkLatencyUs = 1e6;
/// Training steps of one whale-run.
inline constexpr int64_t kMaxSteps = int64_t{1} << 40;

}  // namespace whale::plan

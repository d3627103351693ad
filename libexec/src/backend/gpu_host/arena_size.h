// File: arena_size.h
// How big a GPU rank's device arena is: the plan's predicted peak of the model's tensors
// (whale-sim's memory model) plus a stated margin, and whether that fits the device's free
// memory with room left for the CUDA context, NCCL, cuBLAS and CUPTI. A host function, so that
// machines without a GPU test it.
#pragma once

#include <cstddef>
#include <string>

namespace whale::exec::gpu {

constexpr std::size_t kGiB = std::size_t{1} << 30;

/// The margin over the predicted tensor peak: 25% for what the memory model does not count
/// exactly (the backend's per-op scratch, the cross-entropy and attention buffers, allocator
/// alignment and fragmentation in the arena's first-fit), plus 2 GiB of fixed buffers (the
/// cuBLASLt workspace, 32 MiB, and the largest transient scratch of one op).
constexpr double kArenaMarginFraction = 0.25;
constexpr std::size_t kArenaMarginBytes = 2 * kGiB;
/// Left outside the arena on the device: the CUDA context, NCCL's buffers (a few hundred MiB
/// per communicator), cuBLAS's and CUPTI's own allocations.
constexpr std::size_t kDeviceReserveBytes = 2 * kGiB;
/// The arena of a backend made without a predicted peak (the op tests, one-shot tools).
constexpr std::size_t kDefaultArenaBytes = 2 * kGiB;

/// predicted_tensor_bytes * (1 + kArenaMarginFraction) + kArenaMarginBytes, rounded up to a
/// multiple of 2 MiB (the driver's allocation granularity). predicted_tensor_bytes >= 0.
std::size_t arena_bytes_for_peak(double predicted_tensor_bytes);

/// "" when an arena of `arena_bytes` fits in `free_bytes` with kDeviceReserveBytes to spare;
/// otherwise what does not fit, in GiB, for an error message.
std::string arena_shortfall(std::size_t arena_bytes, std::size_t free_bytes);

}  // namespace whale::exec::gpu

// File: units.h
// One type alias per physical unit; every quantity in whale is an SI double named with its unit.
#pragma once

namespace whale {

/// Time in seconds.
using Seconds = double;
/// Size in bytes.
using Bytes = double;
/// A count of floating-point operations.
using Flops = double;
/// Compute throughput in floating-point operations per second.
using FlopsPerSecond = double;
/// Bandwidth in bytes per second.
using BytesPerSecond = double;

/// Bytes in one GiB (2^30).
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
/// Bytes in one MiB (2^20).
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

/// Gigabits per second (the unit of `_gbps` YAML fields) to bytes per second.
constexpr BytesPerSecond gbps_to_bytes_per_s(double gbps) { return gbps * 1e9 / 8.0; }
/// Bytes per second to gigabits per second.
constexpr double bytes_per_s_to_gbps(BytesPerSecond b) { return b * 8.0 / 1e9; }
/// Gigabytes per second (`_gbytes_per_s` fields, 1e9 bytes) to bytes per second.
constexpr BytesPerSecond gbytes_per_s_to_bytes_per_s(double g) { return g * 1e9; }

}  // namespace whale

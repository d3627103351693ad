// File: arena_size.cpp
// The device arena's size from the predicted peak, and its fit in free memory.
#include "backend/gpu_host/arena_size.h"

#include <cmath>
#include <cstdio>

namespace whale::exec::gpu {

std::size_t arena_bytes_for_peak(double predicted_tensor_bytes) {
  constexpr std::size_t kGranularity = std::size_t{2} << 20;
  const double wanted = std::ceil(predicted_tensor_bytes * (1.0 + kArenaMarginFraction)) +
                        static_cast<double>(kArenaMarginBytes);
  const auto bytes = static_cast<std::size_t>(wanted);
  return (bytes + kGranularity - 1) / kGranularity * kGranularity;
}

std::string arena_shortfall(std::size_t arena_bytes, std::size_t free_bytes) {
  if (arena_bytes + kDeviceReserveBytes <= free_bytes) return "";
  char text[160];
  std::snprintf(text, sizeof text, "%.2f GiB of arena + %.2f GiB reserve, but %.2f GiB free",
                static_cast<double>(arena_bytes) / kGiB,
                static_cast<double>(kDeviceReserveBytes) / kGiB,
                static_cast<double>(free_bytes) / kGiB);
  return text;
}

}  // namespace whale::exec::gpu

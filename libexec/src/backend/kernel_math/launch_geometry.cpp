// File: launch_geometry.cpp
// Launch geometry of the CUDA kernels (see launch_geometry.h).
#include "backend/kernel_math/launch_geometry.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/kernel_math/attention_math.h"
#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {
namespace {
unsigned ceil_div(std::size_t a, std::size_t b) { return static_cast<unsigned>((a + b - 1) / b); }
}  // namespace

Launch elementwise_launch(std::size_t count) {
  const std::size_t blocks = (count + kBlockThreads - 1) / kBlockThreads;
  return {static_cast<unsigned>(std::min<std::size_t>(blocks, kMaxElementBlocks)), 1,
          kBlockThreads, 0};
}

Launch warp_per_row_launch(int rows) {
  constexpr unsigned kRowsPerBlock = kBlockThreads / kWarpSize;
  return {ceil_div(static_cast<std::size_t>(rows), kRowsPerBlock), 1, kBlockThreads, 0};
}

Launch column_launch(int channels) {
  return {ceil_div(static_cast<std::size_t>(channels), kBlockThreads), 1, kBlockThreads, 0};
}

Launch column_chunks_launch(int rows, int channels) {
  if (rows <= 0 || channels <= 0) return {0, 0, kBlockThreads, 0};
  return {ceil_div(static_cast<std::size_t>(channels), kColumnSumColumns),
          ceil_div(static_cast<std::size_t>(rows), kColumnChunkRows), kColumnSumColumns * kColumnSumLanes, 0};
}

std::size_t column_partials_count(int rows, int channels) {
  if (rows <= 0 || channels <= 0) return 0;
  return ceil_div(static_cast<std::size_t>(rows), kColumnChunkRows) * static_cast<std::size_t>(channels);
}

Launch cross_entropy_launch(int rows) { return {static_cast<unsigned>(rows), 1, kBlockThreads, 0}; }

int cross_entropy_entries_per_thread(int vocabulary) {
  return static_cast<int>(ceil_div(static_cast<std::size_t>(vocabulary), kBlockThreads));
}

Launch attention_launch(int batch, int sequence, int heads, int head_size, bool with_row_stats) {
  if (head_size < 1 || head_size > kMaxHeadSize)
    throw std::invalid_argument("CUDA attention: head size " + std::to_string(head_size) +
                                " outside 1.." + std::to_string(kMaxHeadSize));
  const std::size_t tile_floats =
      2 * static_cast<std::size_t>(kAttentionTile) * head_size + (with_row_stats ? 2 * kAttentionTile : 0);
  return {ceil_div(static_cast<std::size_t>(sequence), kAttentionTile),
          static_cast<unsigned>(batch * heads), static_cast<unsigned>(kAttentionTile),
          tile_floats * sizeof(float)};
}

}  // namespace whale::exec::kmath

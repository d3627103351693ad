// File: launch_geometry.h
// Launch geometry of the CUDA kernels as host functions (grids, blocks, tiles, shared memory),
// so that the index math is tested without a GPU. Every kernel launches with these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace whale::exec::kmath {

struct Launch {
  unsigned grid_x = 1, grid_y = 1;
  unsigned block = 1;
  std::size_t shared_bytes = 0;
};

/// Threads per block of the element-wise, column and row kernels.
constexpr unsigned kBlockThreads = 256;
/// The most blocks of an element-wise (grid-stride) launch.
constexpr unsigned kMaxElementBlocks = 65535;

/// Element-wise over `count` elements: ceil(count / 256) blocks of 256, at most 65535 (the
/// kernel strides by grid * block); count 0 gives grid 0 (nothing to launch).
Launch elementwise_launch(std::size_t count);
/// One warp per row (layernorm): 8 rows per 256-thread block.
Launch warp_per_row_launch(int rows);
/// One thread per column (the embedding's position gradient; the final pass of a column sum).
Launch column_launch(int channels);
/// Rows per chunk of a parallel column sum (parameter gradients of bias and norms).
constexpr int kColumnChunkRows = 256;
/// Threads of a chunk block: kColumnSumColumns adjacent columns (coalesced) x 8 row lanes.
constexpr int kColumnSumColumns = 32;
constexpr int kColumnSumLanes = 8;
/// The partial pass of a column sum: grid (ceil(C / 32), ceil(N / 256)), 256 threads; block
/// (x, y) writes the double partial sums of columns 32x.. over rows 256y.. (grid 0 when empty).
Launch column_chunks_launch(int rows, int channels);
/// The partial sums a column sum needs: chunks x channels doubles.
std::size_t column_partials_count(int rows, int channels);
/// One 256-thread block per row of the vocabulary (fused softmax + cross-entropy): thread t
/// takes the vocabulary entries t, t + 256, ...; cross_entropy_entries_per_thread of them.
Launch cross_entropy_launch(int rows);
int cross_entropy_entries_per_thread(int vocabulary);

/// Flash attention: grid (ceil(T / tile), B * NH), one thread per row of a tile
/// (kAttentionTile), shared memory for two tiles of head_size floats (keys and values in
/// forward and dq; queries and output gradients in dk/dv) plus, for dk/dv, the tile's lse and
/// delta. Throws std::invalid_argument for head_size > kMaxHeadSize.
Launch attention_launch(int batch, int sequence, int heads, int head_size, bool with_row_stats);
}  // namespace whale::exec::kmath

// File: cuda_column_sum.cuh
// The parallel, deterministic column sum of the parameter gradients (bias, layernorm weight and
// bias, RMSNorm weight): blocks of 32 columns x 8 row lanes over chunks of 256 rows write
// double partial sums (each lane's rows in order, then the 8 lanes in order), and one thread
// per column adds the chunks' partials in order into the fp32 gradient. The order depends on
// the shape only, so the result is the same on every run.
#pragma once

#include "backend/cuda/cuda_check.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {

/// Partials (chunks, C) doubles: partials[y][c] = sum over rows of chunk y of term(r, c).
template <class Term>
__global__ void column_chunk_kernel(double* partials, int rows, int channels, Term term) {
  __shared__ double lanes[kmath::kColumnSumLanes][kmath::kColumnSumColumns];
  const int x = static_cast<int>(threadIdx.x) % kmath::kColumnSumColumns;
  const int lane = static_cast<int>(threadIdx.x) / kmath::kColumnSumColumns;
  const int c = static_cast<int>(blockIdx.x) * kmath::kColumnSumColumns + x;
  const int first = static_cast<int>(blockIdx.y) * kmath::kColumnChunkRows;
  const int end = first + kmath::kColumnChunkRows < rows ? first + kmath::kColumnChunkRows : rows;
  double sum = 0.0;
  if (c < channels)
    for (int r = first + lane; r < end; r += kmath::kColumnSumLanes) sum += term(r, c);
  lanes[lane][x] = sum;
  __syncthreads();
  if (lane != 0 || c >= channels) return;
  double chunk = 0.0;
  for (int l = 0; l < kmath::kColumnSumLanes; ++l) chunk += lanes[l][x];
  partials[static_cast<std::size_t>(blockIdx.y) * channels + c] = chunk;
}

/// dst[c] += the chunks' partials of column c, summed in chunk order, rounded once to fp32.
template <class Partial>
__global__ void column_finish_kernel(float* dst, const Partial* partials, int chunks, int channels) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= channels) return;
  Partial sum = 0.0;
  for (int k = 0; k < chunks; ++k) sum += partials[static_cast<std::size_t>(k) * channels + c];
  dst[c] += static_cast<float>(sum);
}

/// dst (C, fp32) += the column sums over rows of term(r, c) (double); `partials` is device
/// scratch of kmath::column_partials_count(rows, channels) doubles.
template <class Term>
void column_sum(cudaStream_t stream, float* dst, double* partials, int rows, int channels,
                Term term) {
  const kmath::Launch chunks = kmath::column_chunks_launch(rows, channels);
  const kmath::Launch finish = kmath::column_launch(channels);
  if (chunks.grid_x == 0) return;
  column_chunk_kernel<<<dim3(chunks.grid_x, chunks.grid_y), chunks.block, 0, stream>>>(
      partials, rows, channels, term);
  WHALE_CUDA_CHECK_LAUNCH();
  column_finish_kernel<<<finish.grid_x, finish.block, 0, stream>>>(
      dst, partials, static_cast<int>(chunks.grid_y), channels);
  WHALE_CUDA_CHECK_LAUNCH();
}

}  // namespace whale::exec::cuda

// File: test_launch_geometry.cpp
// Launch geometry, attention tiles, AdamW chunk lists and embedding token buckets: exact values
// on small cases.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "backend/gpu_host/adamw_chunks.h"
#include "backend/gpu_host/token_buckets.h"
#include "backend/kernel_math/attention_math.h"
#include "backend/kernel_math/launch_geometry.h"

using namespace whale::exec;
using namespace whale::exec::kmath;

TEST_CASE("element-wise, warp-per-row, column and cross-entropy launches") {
  CHECK(elementwise_launch(0).grid_x == 0u);
  CHECK(elementwise_launch(1).grid_x == 1u);
  CHECK(elementwise_launch(256).grid_x == 1u);
  CHECK(elementwise_launch(257).grid_x == 2u);
  CHECK(elementwise_launch(std::size_t{1} << 30).grid_x == 65535u);  // capped; grid-stride
  CHECK(elementwise_launch(257).block == 256u);
  CHECK(warp_per_row_launch(8).grid_x == 1u);
  CHECK(warp_per_row_launch(9).grid_x == 2u);
  CHECK(column_launch(768).grid_x == 3u);
  CHECK(column_launch(769).grid_x == 4u);
  // Column sums: 33 columns in blocks of 32, 513 rows in chunks of 256.
  CHECK(column_chunks_launch(513, 33).grid_x == 2u);
  CHECK(column_chunks_launch(513, 33).grid_y == 3u);
  CHECK(column_chunks_launch(513, 33).block == 256u);
  CHECK(column_partials_count(513, 33) == 99u);
  CHECK(column_chunks_launch(0, 33).grid_x == 0u);
  CHECK(column_partials_count(0, 33) == 0u);
  CHECK(cross_entropy_launch(12).grid_x == 12u);
  CHECK(cross_entropy_entries_per_thread(50257) == 197);
  CHECK(cross_entropy_entries_per_thread(256) == 1);
}

TEST_CASE("attention launch: tiles, grid and shared memory") {
  const Launch fwd = attention_launch(2, 65, 3, 64, false);
  CHECK(fwd.grid_x == 3u);  // ceil(65 / 32)
  CHECK(fwd.grid_y == 6u);  // B * NH
  CHECK(fwd.block == 32u);
  CHECK(fwd.shared_bytes == 2u * 32 * 64 * 4);
  CHECK(attention_launch(1, 32, 1, 16, true).shared_bytes == (2u * 32 * 16 + 64) * 4);
  CHECK_THROWS_AS(attention_launch(1, 8, 1, 129, false), std::invalid_argument);
  CHECK(tile_rows(0, 65).first == 0);
  CHECK(tile_rows(2, 65).first == 64);
  CHECK(tile_rows(2, 65).count == 1);
  CHECK(tile_rows(3, 65).count == 0);
  CHECK(causal_keys_in_tile(40, 32, 32) == 9);   // keys 32..40
  CHECK(causal_keys_in_tile(31, 32, 32) == 0);   // the tile is in the future
  CHECK(causal_keys_in_tile(70, 32, 32) == 32);  // the whole tile
  CHECK(causal_queries_in_tile(40, 32, 32).first == 40);
  CHECK(causal_queries_in_tile(40, 32, 32).count == 24);  // queries 40..63
  CHECK(causal_queries_in_tile(5, 32, 10).first == 32);
  CHECK(causal_queries_in_tile(5, 32, 10).count == 10);
  CHECK(causal_queries_in_tile(50, 32, 10).count == 0);
}

TEST_CASE("multi-tensor AdamW chunk list") {
  const auto chunks = gpu::adamw_chunks({10, 0, 4}, 4);
  REQUIRE(chunks.size() == 4u);
  CHECK(chunks[0].tensor == 0u);
  CHECK(chunks[0].offset == 0u);
  CHECK(chunks[0].count == 4u);
  CHECK(chunks[2].offset == 8u);
  CHECK(chunks[2].count == 2u);
  CHECK(chunks[3].tensor == 2u);  // the empty tensor has no chunk
  CHECK(chunks[3].offset == 0u);
  CHECK(chunks[3].count == 4u);
}

TEST_CASE("token buckets: distinct tokens ascending, positions in order") {
  const std::vector<int32_t> tokens = {3, 1, 3, 0, 3, 1};
  const gpu::TokenBuckets b = gpu::token_buckets(tokens.data(), 6, 5);
  CHECK(b.tokens == std::vector<int32_t>{0, 1, 3});
  CHECK(b.offsets == std::vector<int32_t>{0, 1, 3, 6});
  CHECK(b.positions == std::vector<int32_t>{3, 1, 5, 0, 2, 4});
  const std::vector<int32_t> bad = {0, 5};
  CHECK_THROWS_AS(gpu::token_buckets(bad.data(), 2, 5), std::out_of_range);
}

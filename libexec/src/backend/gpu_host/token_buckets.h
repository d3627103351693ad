// File: token_buckets.h
// The positions of each distinct token of a batch, for the deterministic embedding backward:
// one CUDA block per distinct token adds its positions' gradient rows in position order (the
// CPU backend's order), so no float atomics race.
#pragma once

#include <cstdint>
#include <vector>

namespace whale::exec::gpu {

struct TokenBuckets {
  std::vector<std::int32_t> tokens;   // the distinct tokens, ascending
  std::vector<std::int32_t> offsets;  // tokens.size() + 1: bucket i is positions[offsets[i], offsets[i+1])
  std::vector<std::int32_t> positions;  // flat positions n = b*T + t, ascending within a bucket
};

/// Buckets of tokens[0, count); a negative token (another tensor rank's row of a
/// vocabulary-parallel table) has none. Throws std::out_of_range for a token at or above
/// `vocabulary`.
TokenBuckets token_buckets(const std::int32_t* tokens, int count, int vocabulary);

}  // namespace whale::exec::gpu

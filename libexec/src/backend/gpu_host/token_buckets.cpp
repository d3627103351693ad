// File: token_buckets.cpp
// Positions grouped by token (see token_buckets.h): a stable counting sort.
#include "backend/gpu_host/token_buckets.h"

#include <stdexcept>
#include <string>

namespace whale::exec::gpu {

TokenBuckets token_buckets(const std::int32_t* tokens, int count, int vocabulary) {
  std::vector<std::int32_t> per_token(static_cast<std::size_t>(vocabulary) + 1, 0);
  int held = 0;  // tokens of this table: the negative ones are another tensor rank's rows
  for (int n = 0; n < count; ++n) {
    if (tokens[n] < 0) continue;
    ++held;
    if (tokens[n] >= vocabulary)
      throw std::out_of_range("embedding token " + std::to_string(tokens[n]) +
                              " outside vocabulary 0.." + std::to_string(vocabulary - 1));
    ++per_token[static_cast<std::size_t>(tokens[n]) + 1];
  }
  TokenBuckets buckets;
  for (int v = 0; v < vocabulary; ++v)
    if (per_token[static_cast<std::size_t>(v) + 1] > 0) buckets.tokens.push_back(v);
  for (int v = 0; v < vocabulary; ++v) per_token[v + 1] += per_token[v];  // start of each token
  buckets.offsets.push_back(0);
  for (std::int32_t v : buckets.tokens) buckets.offsets.push_back(per_token[v + 1]);
  buckets.positions.resize(static_cast<std::size_t>(held));
  for (int n = 0; n < count; ++n)
    if (tokens[n] >= 0) buckets.positions[per_token[tokens[n]]++] = n;
  return buckets;
}

}  // namespace whale::exec::gpu

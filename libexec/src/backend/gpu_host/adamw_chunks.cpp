// File: adamw_chunks.cpp
// The chunk list of the multi-tensor AdamW kernel (see adamw_chunks.h).
#include "backend/gpu_host/adamw_chunks.h"

#include <algorithm>

namespace whale::exec::gpu {

std::vector<AdamwChunk> adamw_chunks(const std::vector<std::size_t>& counts,
                                     std::size_t chunk_elements) {
  std::vector<AdamwChunk> chunks;
  for (std::size_t t = 0; t < counts.size(); ++t)
    for (std::size_t offset = 0; offset < counts[t]; offset += chunk_elements)
      chunks.push_back({static_cast<std::uint32_t>(t), offset,
                        static_cast<std::uint32_t>(std::min(chunk_elements, counts[t] - offset))});
  return chunks;
}

}  // namespace whale::exec::gpu

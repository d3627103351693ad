// File: adamw_chunks.h
// The chunk list of the multi-tensor AdamW kernel: every tensor cut into chunks of at most
// `chunk_elements`, one CUDA block per chunk, so one launch updates many tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace whale::exec::gpu {

struct AdamwChunk {
  std::uint32_t tensor;  // index into the launch's tensor table
  std::uint64_t offset;  // first element of the chunk within the tensor
  std::uint32_t count;   // elements, 1..chunk_elements
};

/// Elements per chunk of the multi-tensor AdamW launch (a block of 256 threads takes 16 each).
constexpr std::size_t kAdamwChunkElements = 4096;

/// The chunks of tensors of `counts` elements, in tensor order then offset order; empty
/// tensors have none. chunk_elements > 0.
std::vector<AdamwChunk> adamw_chunks(const std::vector<std::size_t>& counts,
                                     std::size_t chunk_elements = kAdamwChunkElements);

}  // namespace whale::exec::gpu

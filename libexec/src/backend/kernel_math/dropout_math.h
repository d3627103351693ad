// File: dropout_math.h
// Dropout's keep-or-drop of one element as a pure function of its site's stream and its place,
// shared by the CPU backend, the CUDA kernels and the host tests. Element (row, column) reads
// 16-bit lane column % 4 of splitmix64(splitmix64(stream + row) + column / 4): one hash serves
// four neighbouring columns (a quarter of a hash per attention score in the flash kernels, as
// FlashAttention's Philox draws serve several scores), and the element is dropped (0) when the
// lane falls below round(p * 2^16), else kept and scaled by 1 / (1 - p). Rows and columns are
// the model's (dropout_site.h), so a mask does not depend on how the work is split.
#pragma once

#include <stdint.h>

#include "backend/kernel_math/host_device.h"
#include "backend/kernel_math/splitmix64.h"

namespace whale::exec::kmath {

/// A site's mask in the form the kernels read.
struct DropoutScalars {
  uint64_t stream = 0;
  uint32_t threshold = 0;   // round(p * 2^16), at most 2^16 - 1: a lane below it is dropped
  float keep_scale = 1.0f;  // 1 / (1 - p), rounded to fp32 (PyTorch's and Megatron-LM's scale)
  bool active = false;      // p > 0
};

/// The scalars of probability p in [0, 1) and `stream`.
inline DropoutScalars dropout_scalars(uint64_t stream, double probability) {
  DropoutScalars d;
  d.stream = stream;
  d.active = probability > 0.0;
  if (!d.active) return d;
  const double scaled = probability * 65536.0 + 0.5;
  d.threshold = scaled >= 65535.0 ? 65535u : static_cast<uint32_t>(scaled);
  d.keep_scale = static_cast<float>(1.0 / (1.0 - probability));
  return d;
}

/// The factor element (row, column) is multiplied by: keep_scale when kept, 0 when dropped, 1
/// when the site is inactive.
WHALE_HOST_DEVICE float dropout_factor(const DropoutScalars& d, uint64_t row, uint64_t column) {
  if (!d.active) return 1.0f;
  const uint64_t h = splitmix64(splitmix64(d.stream + row) + (column >> 2));
  const uint32_t lane = static_cast<uint32_t>(h >> (16 * (column & 3))) & 0xFFFFu;
  return lane >= d.threshold ? d.keep_scale : 0.0f;
}

/// An attention dropout's mask for the kernels: row of (sample b, query head h, query) =
/// head_row(b, h) + query, column = the key (dropout_site.h's AttentionDropout).
struct AttentionDropoutScalars {
  DropoutScalars mask;
  int64_t first_sample = 0;
  int first_head = 0, total_heads = 0;
};

/// The mask row of query 0 of sample b (of the micro-batch) and query head h (of the shard).
WHALE_HOST_DEVICE uint64_t attention_head_row(const AttentionDropoutScalars& a, int b, int h,
                                              int sequence) {
  return (static_cast<uint64_t>(a.first_sample + b) * static_cast<uint64_t>(a.total_heads) +
          static_cast<uint64_t>(a.first_head + h)) *
         static_cast<uint64_t>(sequence);
}

}  // namespace whale::exec::kmath

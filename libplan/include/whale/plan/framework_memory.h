// File: framework_memory.h
// FrameworkMemory: what a training framework holds on a device beyond the model's tensors (a
// fixed reserve and the allocator's slack), and whether its attention is fused. Carried by a
// device profile (YAML: the optional `framework_memory` block; docs/profile.md).
#pragma once

#include <string>

#include "whale/plan/units.h"

namespace whale::plan {

struct FrameworkMemory {
  /// Fixed bytes per device: the CUDA context, library handles and workspaces, communicator
  /// buffers (YAML: reserve_gib).
  Bytes reserve_bytes = 0;
  /// Extra bytes per byte of the tensors' peak: the caching allocator's fragmentation and
  /// rounding (YAML: allocator_slack_fraction, in [0, 1]).
  double allocator_slack_fraction = 0;
  /// Whether the framework's attention is fused (flash attention): the attention scores, their
  /// softmax and dropout mask are then never kept for backward (YAML: fused_attention).
  bool fused_attention = false;
  /// Whether the data-parallel gradient buckets are storage of their own beside the gradients
  /// (PyTorch DDP without gradient_as_bucket_view: a second copy of every unsharded gradient
  /// on a replicated stage) rather than the gradients themselves (Megatron-LM's contiguous
  /// gradient buffer, whale-run). YAML: gradient_bucket_copy.
  bool gradient_bucket_copy = false;
  /// Where the figures come from (YAML: source).
  std::string source;

  bool operator==(const FrameworkMemory& other) const;
};

/// The figures a profile without a `framework_memory` block gets, by its kind: a GPU keeps a
/// 2 GiB reserve, no slack and unfused attention; a CPU (whale-run's own backend, which
/// counts only its tensors) nothing.
FrameworkMemory default_framework_memory(const std::string& device_kind);

/// The allocator's slack when the tensors peak at `tensor_bytes`: tensor_bytes *
/// allocator_slack_fraction. A device then holds tensor_bytes + this + reserve_bytes.
Bytes allocator_slack_bytes(const FrameworkMemory& framework, Bytes tensor_bytes);

/// The most tensor bytes that fit in `capacity_bytes` next to the framework's reserve and slack
/// (the inverse of the sum above; negative when the reserve alone does not fit).
Bytes tensor_capacity_bytes(const FrameworkMemory& framework, Bytes capacity_bytes);

}  // namespace whale::plan

// File: framework_memory.cpp
// FrameworkMemory's defaults by device kind and its peak arithmetic.
#include "whale/plan/framework_memory.h"

namespace whale::plan {

bool FrameworkMemory::operator==(const FrameworkMemory& other) const {
  return reserve_bytes == other.reserve_bytes &&
         allocator_slack_fraction == other.allocator_slack_fraction &&
         fused_attention == other.fused_attention &&
         gradient_bucket_copy == other.gradient_bucket_copy && source == other.source;
}

FrameworkMemory default_framework_memory(const std::string& device_kind) {
  FrameworkMemory out;
  if (device_kind == "gpu") {
    out.reserve_bytes = 2.0 * kBytesPerGiB;
    out.source = "default for a gpu profile without framework_memory (docs/profile.md)";
  } else {
    out.source = "default for a cpu profile without framework_memory (docs/profile.md)";
  }
  return out;
}

Bytes allocator_slack_bytes(const FrameworkMemory& framework, Bytes tensor_bytes) {
  return tensor_bytes * framework.allocator_slack_fraction;
}

Bytes tensor_capacity_bytes(const FrameworkMemory& framework, Bytes capacity_bytes) {
  return (capacity_bytes - framework.reserve_bytes) / (1.0 + framework.allocator_slack_fraction);
}

}  // namespace whale::plan

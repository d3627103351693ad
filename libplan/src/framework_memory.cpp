// File: framework_memory.cpp
// FrameworkMemory's defaults by device kind, its attention names and its peak arithmetic.
#include "whale/plan/framework_memory.h"

namespace whale::plan {

bool FrameworkMemory::operator==(const FrameworkMemory& other) const {
  return reserve_bytes == other.reserve_bytes &&
         allocator_slack_fraction == other.allocator_slack_fraction &&
         attention == other.attention && cross_entropy == other.cross_entropy &&
         gradients_freed_after_step == other.gradients_freed_after_step &&
         gradient_bucket_copy == other.gradient_bucket_copy &&
         fp32_gradient_copy == other.fp32_gradient_copy &&
         stage_buffer_cache == other.stage_buffer_cache && dropout_masks_kept == other.dropout_masks_kept &&
         sharded_gradients_held_whole == other.sharded_gradients_held_whole &&
         master_weights_held_whole == other.master_weights_held_whole &&
         source == other.source;
}

const char* to_string(AttentionImplementation attention) {
  switch (attention) {
    case AttentionImplementation::eager: return "eager";
    case AttentionImplementation::fused_softmax: return "fused_softmax";
    case AttentionImplementation::flash: return "flash";
  }
  return "eager";
}

bool parse_attention_implementation(const std::string& text, AttentionImplementation* out) {
  for (AttentionImplementation a : {AttentionImplementation::eager, AttentionImplementation::fused_softmax,
                                    AttentionImplementation::flash}) {
    if (text == to_string(a)) {
      *out = a;
      return true;
    }
  }
  if (text != "sdpa") return false;
  *out = AttentionImplementation::flash;
  return true;
}

const char* to_string(CrossEntropyImplementation cross_entropy) {
  return cross_entropy == CrossEntropyImplementation::pytorch ? "pytorch" : "fused";
}

bool parse_cross_entropy_implementation(const std::string& text, CrossEntropyImplementation* out) {
  for (CrossEntropyImplementation c : {CrossEntropyImplementation::fused, CrossEntropyImplementation::pytorch}) {
    if (text == to_string(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

FrameworkMemory default_framework_memory(const std::string& device_kind) {
  FrameworkMemory out;
  if (device_kind == "gpu") {
    out.reserve_bytes = 2.0 * kBytesPerGiB;
    out.source = "default for a gpu profile without framework_memory (docs/profile.md)";
  } else {
    out.stage_buffer_cache = true;    // whale-run's CPU backend
    out.dropout_masks_kept = false;   // its masks are drawn again in the backward
    out.sharded_gradients_held_whole = true;  // its flat gradient buffer stays whole under ZeRO-2
    out.master_weights_held_whole = true;     // and its flat fp32 values under ZeRO
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

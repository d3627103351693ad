// File: flash_attention_rates.h
// A GPU framework's measured flash-attention throughput per head size (profile YAML
// flash_attention_tflops): libsim prices the attention core by it instead of the GEMM curve
// when the profile's framework keeps flash attention (framework_memory.attention_implementation).
#pragma once

#include <vector>

#include "whale/plan/units.h"

namespace whale::plan {

/// One head size's forward and backward rates. FLOPs are counted as the model counts the
/// attention core (its attention_scores and attention_context GEMMs: 4 s^2 d per head and
/// sample forward, the whole score matrix, though a causal kernel skips the masked half), and
/// the backward as twice the forward, as for every GEMM: rate = those FLOPs / measured time.
struct FlashAttentionRate {
  int head_size = 0;
  FlopsPerSecond forward_flops_per_s = 0;   // YAML: forward (TFLOP/s)
  FlopsPerSecond backward_flops_per_s = 0;  // YAML: backward (TFLOP/s)
};

/// Rates sorted by head size, one per head size; empty: the GEMM curve prices attention.
struct FlashAttentionRates {
  std::vector<FlashAttentionRate> rates;
  bool empty() const { return rates.empty(); }
  /// The rate of the head size nearest `head_size` (the smaller one on a tie). Must not be empty.
  const FlashAttentionRate& nearest(int head_size) const;
};

}  // namespace whale::plan

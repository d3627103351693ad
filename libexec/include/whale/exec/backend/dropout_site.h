// File: dropout_site.h
// Where a dropout mask is drawn from. A mask is a pure function of its site's stream and of
// each element's place (its global row and column, kernel_math/dropout_math.h), never of a
// device's random state: every rank, partition, backend and recomputation that touches an
// element draws the same keep-or-drop for it, and a backward re-draws the forward's mask.
#pragma once

#include <cstdint>

namespace whale::exec {

/// One dropout site of one step (the run's seed, the step, the layer and the site within it,
/// mixed into `stream`) and its probability of dropping an element.
struct DropoutSite {
  uint64_t stream = 0;
  double probability = 0.0;  // in [0, 1); 0: no dropout
  bool active() const { return probability > 0.0; }
};

/// Dropout on attention probabilities (after the softmax, before the product with V), as
/// Megatron-LM and FlashAttention place it. The mask's row of query head h of sample b is
/// ((first_sample + b) * total_heads + first_head + h) * T + query, its column the key, so
/// that a tensor-parallel shard of the heads draws its part of the whole model's mask.
struct AttentionDropout {
  DropoutSite site;
  int64_t first_sample = 0;  // the global index of the micro-batch's sample 0
  int first_head = 0;        // the model's index of this shard's query head 0
  int total_heads = 0;       // the model's query heads
  bool active() const { return site.active(); }
};

}  // namespace whale::exec

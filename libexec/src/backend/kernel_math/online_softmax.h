// File: online_softmax.h
// The streaming softmax state (running max and running sum of exp(x - max)): updated one value
// at a time and merged pairwise, so a row's log-sum-exp comes in one pass without storing its
// probabilities. Used by the fused softmax + cross-entropy kernel (and the host tests).
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

struct OnlineSoftmax {
  float max = -INFINITY;  // the largest value seen
  float sum = 0.0f;       // sum of exp(value - max) over the values seen
};

/// Adds one value x: the sum is rescaled to a new max before x's term is added.
WHALE_HOST_DEVICE OnlineSoftmax online_softmax_update(OnlineSoftmax s, float x) {
  if (x > s.max) {
    s.sum = s.sum * expf(s.max - x) + 1.0f;
    s.max = x;
  } else {
    s.sum += expf(x - s.max);
  }
  return s;
}

/// The state of the union of the values of a and b. Commutative bit for bit, so a butterfly
/// gives every lane the same state.
WHALE_HOST_DEVICE OnlineSoftmax online_softmax_merge(OnlineSoftmax a, OnlineSoftmax b) {
  const float m = a.max > b.max ? a.max : b.max;
  if (m == -INFINITY) return a;  // both empty
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

/// log(sum over the values of exp(value)).
WHALE_HOST_DEVICE float online_softmax_logsumexp(OnlineSoftmax s) { return s.max + logf(s.sum); }

/// True when `target` indexes a row of `vocabulary` logits: only then may a kernel read
/// x[target]; a row with any other target gets a NaN loss, which the host reports.
WHALE_HOST_DEVICE bool target_in_vocabulary(int target, int vocabulary) {
  return target >= 0 && target < vocabulary;
}

/// One element of the cross-entropy gradient: scale * (exp(x - lse) - [is target]).
WHALE_HOST_DEVICE float cross_entropy_grad(float x, float lse, bool is_target, float scale) {
  return scale * (expf(x - lse) - (is_target ? 1.0f : 0.0f));
}

}  // namespace whale::exec::kmath

// File: moe_math.h
// The per-row arithmetic of the mixture-of-experts ops (backend.h, "mixture of experts"): the
// softmax_topk and sigmoid_bias routers, their backwards, and the gated combination of the
// experts' outputs. The
// CPU backend runs these functions row by row; the CUDA kernels run the same functions, one
// thread per row, so the host tests of the CPU backend check the GPU's arithmetic too.
#pragma once

#include "backend/kernel_math/host_device.h"

namespace whale::exec::kmath {

/// The top_k experts of one router row in descending logit order, ties to the lower expert
/// index: chosen[j] is the expert with the j-th largest logit(e), e in [0, experts).
template <class Logit>
WHALE_HOST_DEVICE void moe_top_k(Logit logit, int experts, int top_k, int* chosen) {
  for (int j = 0; j < top_k; ++j) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i) taken = taken || chosen[i] == e;
      if (!taken && (best < 0 || logit(e) > logit(best))) best = e;  // strict: lower index wins
    }
    chosen[j] = best;
  }
}

/// One router row of softmax_topk (Mixtral): probs (experts) = the softmax over all logits (the
/// auxiliary loss's P), chosen (top_k) = moe_top_k, gates (top_k) = the softmax over the chosen
/// logits. Exponentials and sums in fp32, summed in expert order.
template <class Logit>
WHALE_HOST_DEVICE void moe_router_row(Logit logit, int experts, int top_k, float* probs,
                                      int* chosen, float* gates) {
  float max_logit = logit(0);
  for (int e = 1; e < experts; ++e) max_logit = logit(e) > max_logit ? logit(e) : max_logit;
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) {
    probs[e] = expf(logit(e) - max_logit);
    sum += probs[e];
  }
  for (int e = 0; e < experts; ++e) probs[e] /= sum;
  moe_top_k(logit, experts, top_k, chosen);
  const float top = logit(chosen[0]);  // the largest chosen logit
  float gate_sum = 0.0f;
  for (int j = 0; j < top_k; ++j) {
    gates[j] = expf(logit(chosen[j]) - top);
    gate_sum += gates[j];
  }
  for (int j = 0; j < top_k; ++j) gates[j] /= gate_sum;
}

/// The gradient of one router row's logits: through the full softmax from aux_dprobs (experts;
/// d loss / d probs[e], the same for every row) and through the gates' softmax from dgates
/// (top_k). add(e, value) receives expert e's whole gradient once, in expert order.
template <class Add>
WHALE_HOST_DEVICE void moe_router_backward_row(const float* probs, const int* chosen,
                                               const float* gates, const float* dgates,
                                               const float* aux_dprobs, int experts, int top_k,
                                               Add add) {
  float aux_dot = 0.0f, gate_dot = 0.0f;
  for (int e = 0; e < experts; ++e) aux_dot += probs[e] * aux_dprobs[e];
  for (int j = 0; j < top_k; ++j) gate_dot += gates[j] * dgates[j];
  for (int e = 0; e < experts; ++e) {
    float value = probs[e] * (aux_dprobs[e] - aux_dot);
    for (int j = 0; j < top_k; ++j)
      if (chosen[j] == e) value += gates[j] * (dgates[j] - gate_dot);
    add(e, value);
  }
}

/// One router row of sigmoid_bias (DeepSeek-V3): scores (experts) = sigmoid(logit), chosen
/// (top_k) = moe_top_k of score + bias (the bias steers the choice only), gates (top_k) = the
/// chosen scores over their sum. fp32; sums in slot order.
template <class Logit>
WHALE_HOST_DEVICE void moe_sigmoid_router_row(Logit logit, const float* bias, int experts,
                                              int top_k, float* scores, int* chosen,
                                              float* gates) {
  for (int e = 0; e < experts; ++e) scores[e] = 1.0f / (1.0f + expf(-logit(e)));
  moe_top_k([scores, bias](int e) { return scores[e] + bias[e]; }, experts, top_k, chosen);
  float sum = 0.0f;
  for (int j = 0; j < top_k; ++j) sum += scores[chosen[j]];
  for (int j = 0; j < top_k; ++j) gates[j] = scores[chosen[j]] / sum;
}

/// The gradient of one sigmoid_bias router row's logits: through the gates' normalization from
/// dgates (top_k), and through the normalized scores s_e / sum(s) (the auxiliary loss's P) from
/// aux_dprobs (experts, the same for every row); both through the sigmoid. The bias has none.
/// add(e, value) receives expert e's whole gradient once, in expert order.
template <class Add>
WHALE_HOST_DEVICE void moe_sigmoid_router_backward_row(const float* scores, const int* chosen,
                                                       const float* gates, const float* dgates,
                                                       const float* aux_dprobs, int experts,
                                                       int top_k, Add add) {
  float all = 0.0f, aux_dot = 0.0f, chosen_sum = 0.0f, gate_dot = 0.0f;
  for (int e = 0; e < experts; ++e) all += scores[e];
  for (int e = 0; e < experts; ++e) aux_dot += scores[e] / all * aux_dprobs[e];
  for (int j = 0; j < top_k; ++j) {
    chosen_sum += scores[chosen[j]];
    gate_dot += gates[j] * dgates[j];
  }
  for (int e = 0; e < experts; ++e) {
    float dscore = (aux_dprobs[e] - aux_dot) / all;
    for (int j = 0; j < top_k; ++j)
      if (chosen[j] == e) dscore += (dgates[j] - gate_dot) / chosen_sum;
    add(e, dscore * scores[e] * (1.0f - scores[e]));
  }
}

/// One router row of either router: moe_sigmoid_router_row when `sigmoid` (sigmoid_bias), else
/// moe_router_row (softmax_topk; `bias` unread).
template <class Logit>
WHALE_HOST_DEVICE void moe_route_row(bool sigmoid, Logit logit, const float* bias, int experts,
                                     int top_k, float* probs, int* chosen, float* gates) {
  if (sigmoid)
    moe_sigmoid_router_row(logit, bias, experts, top_k, probs, chosen, gates);
  else
    moe_router_row(logit, experts, top_k, probs, chosen, gates);
}

/// The backward of moe_route_row.
template <class Add>
WHALE_HOST_DEVICE void moe_route_backward_row(bool sigmoid, const float* probs, const int* chosen,
                                              const float* gates, const float* dgates,
                                              const float* aux_dprobs, int experts, int top_k,
                                              Add add) {
  if (sigmoid)
    moe_sigmoid_router_backward_row(probs, chosen, gates, dgates, aux_dprobs, experts, top_k, add);
  else
    moe_router_backward_row(probs, chosen, gates, dgates, aux_dprobs, experts, top_k, add);
}

/// Channel c of one token's combined expert output: the sum over its top_k slots, in slot
/// order, of gate * expert_out(slot's routed row, c); a slot whose row is negative (dropped
/// by capacity) adds nothing.
template <class ExpertOut>
WHALE_HOST_DEVICE float moe_combine_value(ExpertOut expert_out, const float* gates,
                                          const int* slot_rows, int top_k, int c) {
  float sum = 0.0f;
  for (int j = 0; j < top_k; ++j)
    if (slot_rows[j] >= 0) sum += gates[j] * expert_out(slot_rows[j], c);
  return sum;
}

/// d loss / d gate of one slot: the dot product of the token's output gradient with the slot's
/// expert output over `channels`, in channel order.
template <class Dout, class ExpertOut>
WHALE_HOST_DEVICE float moe_gate_gradient(Dout dout, ExpertOut expert_out, int channels) {
  float dot = 0.0f;
  for (int c = 0; c < channels; ++c) dot += dout(c) * expert_out(c);
  return dot;
}

}  // namespace whale::exec::kmath

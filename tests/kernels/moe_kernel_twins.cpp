// File: moe_kernel_twins.cpp
// Host twins of the MoE kernels (moe_kernel_twins.h): each loop body is one CUDA thread's work.
#include "moe_kernel_twins.h"

#include <cstddef>

#include "backend/kernel_math/moe_math.h"

namespace whale::exec::test {

void twin_moe_router_forward(plan::MoeRouter router, float* probs, int32_t* chosen,
                             float* gates, const float* logits, const float* bias, int rows,
                             int experts, int top_k) {
  const bool sigmoid = router == plan::MoeRouter::sigmoid_bias;
  for (std::size_t n = 0; n < static_cast<std::size_t>(rows); ++n) {  // a thread per row
    const float* row = logits + n * experts;
    kmath::moe_route_row(sigmoid, [row](int e) { return row[e]; }, bias, experts, top_k,
                         probs + n * experts, chosen + n * top_k, gates + n * top_k);
  }
}

void twin_moe_router_backward(plan::MoeRouter router, float* dlogits, const float* probs,
                              const int32_t* chosen, const float* gates, const float* dgates,
                              const float* aux_dprobs, int rows, int experts, int top_k) {
  const bool sigmoid = router == plan::MoeRouter::sigmoid_bias;
  for (std::size_t n = 0; n < static_cast<std::size_t>(rows); ++n) {  // a thread per row
    float* row = dlogits + n * experts;
    const std::size_t k = n * top_k;
    kmath::moe_route_backward_row(sigmoid, probs + n * experts, chosen + k, gates + k,
                                  dgates + k, aux_dprobs, experts, top_k,
                                  [row](int e, float value) { row[e] = row[e] + value; });
  }
}

void twin_moe_dispatch_forward(float* out, const float* inp, const int32_t* source_rows,
                               int routed_rows, int channels) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(routed_rows) * channels; ++i) {
    const std::size_t m = i / channels, c = i % channels;
    out[i] = inp[static_cast<std::size_t>(source_rows[m]) * channels + c];
  }
}

void twin_moe_dispatch_backward(float* dinp, const float* dout, const int32_t* slot_rows,
                                int rows, int top_k, int channels) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * channels; ++i) {
    const std::size_t n = i / channels, c = i % channels;
    float sum = dinp[i];
    for (int j = 0; j < top_k; ++j) {
      const int32_t m = slot_rows[n * top_k + j];
      if (m >= 0) sum += dout[static_cast<std::size_t>(m) * channels + c];
    }
    dinp[i] = sum;
  }
}

void twin_moe_combine_forward(float* out, const float* expert_out, const float* gates,
                              const int32_t* slot_rows, int rows, int top_k, int channels) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * channels; ++i) {
    const std::size_t n = i / channels;
    const int c = static_cast<int>(i % channels);
    out[i] = out[i] + kmath::moe_combine_value(
                          [=](int m, int col) {
                            return expert_out[static_cast<std::size_t>(m) * channels + col];
                          },
                          gates + n * top_k, slot_rows + n * top_k, top_k, c);
  }
}

void twin_moe_combine_backward(float* dexpert_out, float* dgates, const float* dout,
                               const float* expert_out, const float* gates,
                               const int32_t* slot_rows, int rows, int top_k, int channels) {
  const std::size_t slots = static_cast<std::size_t>(rows) * top_k;
  for (std::size_t i = 0; i < slots * channels; ++i) {  // a thread per (slot, channel)
    const std::size_t slot = i / channels, c = i % channels, n = slot / top_k;
    const int32_t m = slot_rows[slot];
    if (m < 0) continue;
    float& dy = dexpert_out[static_cast<std::size_t>(m) * channels + c];
    dy = dy + gates[slot] * dout[n * channels + c];
  }
  for (std::size_t slot = 0; slot < slots; ++slot) {  // a thread per slot
    const int32_t m = slot_rows[slot];
    if (m < 0) continue;
    const float* dn = dout + (slot / top_k) * channels;
    const float* ym = expert_out + static_cast<std::size_t>(m) * channels;
    dgates[slot] += kmath::moe_gate_gradient([dn](int c) { return dn[c]; },
                                             [ym](int c) { return ym[c]; }, channels);
  }
}

}  // namespace whale::exec::test

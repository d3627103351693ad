// File: moe_kernel_twins.h
// Host twins of the mixture-of-experts CUDA kernels (cuda_moe_kernels.cu): the element functions
// of kernel_math/moe_math.h composed as the kernels compose them, one "thread" per row (router),
// per output element (dispatch backward, combine) or per slot (gate gradients).
#pragma once

#include <cstdint>

#include "whale/plan/moe.h"

namespace whale::exec::test {

void twin_moe_router_forward(plan::MoeRouter router, float* probs, int32_t* chosen,
                             float* gates, const float* logits, const float* bias, int rows,
                             int experts, int top_k);
void twin_moe_router_backward(plan::MoeRouter router, float* dlogits, const float* probs,
                              const int32_t* chosen, const float* gates, const float* dgates,
                              const float* aux_dprobs, int rows, int experts, int top_k);
void twin_moe_dispatch_forward(float* out, const float* inp, const int32_t* source_rows,
                               int routed_rows, int channels);
void twin_moe_dispatch_backward(float* dinp, const float* dout, const int32_t* slot_rows,
                                int rows, int top_k, int channels);
void twin_moe_combine_forward(float* out, const float* expert_out, const float* gates,
                              const int32_t* slot_rows, int rows, int top_k, int channels);
void twin_moe_combine_backward(float* dexpert_out, float* dgates, const float* dout,
                               const float* expert_out, const float* gates,
                               const int32_t* slot_rows, int rows, int top_k, int channels);

}  // namespace whale::exec::test

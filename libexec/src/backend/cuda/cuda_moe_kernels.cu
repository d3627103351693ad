// File: cuda_moe_kernels.cu
// Mixture-of-experts CUDA kernels: the softmax_topk and sigmoid_bias routers and their
// backwards (one thread per token row), the dispatch gather, and the gated combine and its backward (one thread per
// output element), with the per-row arithmetic of kernel_math/moe_math.h that the CPU backend
// runs too. Every output is written by one thread in a fixed order: deterministic, no atomics.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype.h"
#include "backend/cuda/cuda_elementwise.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernel_math/launch_geometry.h"
#include "backend/kernel_math/moe_math.h"

namespace whale::exec::cuda {
template <class T>
void moe_router_forward(cudaStream_t stream, plan::MoeRouter router, float* probs,
                        int32_t* chosen, float* gates, const T* logits, const float* bias,
                        int rows, int experts, int top_k) {
  const bool sigmoid = router == plan::MoeRouter::sigmoid_bias;
  launch_elementwise(stream, static_cast<std::size_t>(rows), [=] __device__(std::size_t n) {
    const T* row = logits + n * experts;
    kmath::moe_route_row(sigmoid, [row](int e) { return to_float(row[e]); }, bias, experts,
                         top_k, probs + n * experts, chosen + n * top_k, gates + n * top_k);
  });
}

template <class T>
void moe_router_backward(cudaStream_t stream, plan::MoeRouter router, T* dlogits,
                         const float* probs, const int32_t* chosen, const float* gates,
                         const float* dgates, const float* aux_dprobs, int rows, int experts,
                         int top_k) {
  const bool sigmoid = router == plan::MoeRouter::sigmoid_bias;
  launch_elementwise(stream, static_cast<std::size_t>(rows), [=] __device__(std::size_t n) {
    T* row = dlogits + n * experts;
    const std::size_t k = n * top_k;
    kmath::moe_route_backward_row(
        sigmoid, probs + n * experts, chosen + k, gates + k, dgates + k, aux_dprobs, experts,
        top_k, [row](int e, float value) { row[e] = from_float<T>(to_float(row[e]) + value); });
  });
}

template <class T>
void moe_dispatch_forward(cudaStream_t stream, T* out, const T* inp, const int32_t* source_rows,
                          int routed_rows, int channels) {
  launch_elementwise(stream, static_cast<std::size_t>(routed_rows) * channels,
             [=] __device__(std::size_t i) {
               const std::size_t m = i / channels, c = i % channels;
               out[i] = inp[static_cast<std::size_t>(source_rows[m]) * channels + c];
             });
}

template <class T>
void moe_dispatch_backward(cudaStream_t stream, T* dinp, const T* dout, const int32_t* slot_rows,
                           int rows, int top_k, int channels) {
  launch_elementwise(stream, static_cast<std::size_t>(rows) * channels, [=] __device__(std::size_t i) {
    const std::size_t n = i / channels, c = i % channels;
    float sum = to_float(dinp[i]);
    for (int j = 0; j < top_k; ++j) {
      const int32_t m = slot_rows[n * top_k + j];
      if (m >= 0) sum += to_float(dout[static_cast<std::size_t>(m) * channels + c]);
    }
    dinp[i] = from_float<T>(sum);
  });
}

template <class T>
void moe_combine_forward(cudaStream_t stream, T* out, const T* expert_out, const float* gates,
                         const int32_t* slot_rows, int rows, int top_k, int channels) {
  launch_elementwise(stream, static_cast<std::size_t>(rows) * channels, [=] __device__(std::size_t i) {
    const std::size_t n = i / channels;
    const int c = static_cast<int>(i % channels);
    const float value = kmath::moe_combine_value(
        [=](int m, int col) {
          return to_float(expert_out[static_cast<std::size_t>(m) * channels + col]);
        },
        gates + n * top_k, slot_rows + n * top_k, top_k, c);
    out[i] = from_float<T>(to_float(out[i]) + value);
  });
}

template <class T>
void moe_combine_backward(cudaStream_t stream, T* dexpert_out, float* dgates, const T* dout,
                          const T* expert_out, const float* gates, const int32_t* slot_rows,
                          int rows, int top_k, int channels) {
  const std::size_t slots = static_cast<std::size_t>(rows) * top_k;
  launch_elementwise(stream, slots * channels, [=] __device__(std::size_t i) {
    const std::size_t slot = i / channels, c = i % channels, n = slot / top_k;
    const int32_t m = slot_rows[slot];
    if (m < 0) return;
    T& dy = dexpert_out[static_cast<std::size_t>(m) * channels + c];
    dy = from_float<T>(to_float(dy) + gates[slot] * to_float(dout[n * channels + c]));
  });
  launch_elementwise(stream, slots, [=] __device__(std::size_t slot) {
    const int32_t m = slot_rows[slot];
    if (m < 0) return;
    const T* dn = dout + (slot / top_k) * channels;
    const T* ym = expert_out + static_cast<std::size_t>(m) * channels;
    dgates[slot] += kmath::moe_gate_gradient([dn](int c) { return to_float(dn[c]); },
                                             [ym](int c) { return to_float(ym[c]); }, channels);
  });
}

#define WHALE_INSTANTIATE_MOE(T)                                                                \
  template void moe_router_forward<T>(cudaStream_t, plan::MoeRouter, float*, int32_t*,       \
                                      float*, const T*, const float*, int, int, int);         \
  template void moe_router_backward<T>(cudaStream_t, plan::MoeRouter, T*, const float*,       \
                                       const int32_t*, const float*, const float*,            \
                                       const float*, int, int, int);                          \
  template void moe_dispatch_forward<T>(cudaStream_t, T*, const T*, const int32_t*, int, int); \
  template void moe_dispatch_backward<T>(cudaStream_t, T*, const T*, const int32_t*, int, int, \
                                         int);                                                \
  template void moe_combine_forward<T>(cudaStream_t, T*, const T*, const float*,              \
                                       const int32_t*, int, int, int);                        \
  template void moe_combine_backward<T>(cudaStream_t, T*, float*, const T*, const T*,         \
                                        const float*, const int32_t*, int, int, int);
WHALE_FOR_EACH_DTYPE(WHALE_INSTANTIATE_MOE)

}  // namespace whale::exec::cuda

// File: cpu_moe.cpp
// The CPU backend's mixture-of-experts ops (backend.h, "mixture of experts"): the router, the
// dispatch of tokens to routed rows and the gated combination back, row by row with the
// per-row arithmetic of kernel_math/moe_math.h (which the CUDA kernels share), in fp32.
#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_convert.h"
#include "backend/kernel_math/moe_math.h"

namespace whale::exec::cpu {
namespace {

const int32_t* i32_view(ConstTensorView view, const char* what) {
  if (view.dtype != DType::i32)
    throw std::invalid_argument(std::string("cpu backend: ") + what + " must be i32, got " +
                                dtype_name(view.dtype));
  return view.as<int32_t>();
}
int32_t* i32_view(TensorView view, const char* what) {
  i32_view(ConstTensorView(view), what);
  return view.as<int32_t>();
}
const float* fp32_view(ConstTensorView view, const char* what) {
  if (view.dtype != DType::fp32)
    throw std::invalid_argument(std::string("cpu backend: ") + what + " must be fp32, got " +
                                dtype_name(view.dtype));
  return view.as<float>();
}
float* fp32_view(TensorView view, const char* what) {
  fp32_view(ConstTensorView(view), what);
  return view.as<float>();
}

}  // namespace

void CpuBackend::moe_router_forward(plan::MoeRouter router, TensorView probs, TensorView chosen,
                                    TensorView gates, ConstTensorView logits,
                                    ConstTensorView bias, int rows, int experts, int top_k) {
  Fp32Operands f;
  const float* l = f.in(logits);
  float* p = fp32_view(probs, "router probs");
  int32_t* c = i32_view(chosen, "router choices");
  float* g = fp32_view(gates, "router gates");
  const bool sigmoid = router == plan::MoeRouter::sigmoid_bias;
  const float* b = sigmoid ? fp32_view(bias, "router bias") : nullptr;
  for (int n = 0; n < rows; ++n) {
    const float* row = l + static_cast<std::size_t>(n) * experts;
    float* pn = p + static_cast<std::size_t>(n) * experts;
    int32_t* cn = c + static_cast<std::size_t>(n) * top_k;
    float* gn = g + static_cast<std::size_t>(n) * top_k;
    kmath::moe_route_row(sigmoid, [row](int e) { return row[e]; }, b, experts, top_k, pn, cn, gn);
  }
}

void CpuBackend::moe_router_backward(plan::MoeRouter router, TensorView dlogits,
                                     ConstTensorView probs, ConstTensorView chosen,
                                     ConstTensorView gates, ConstTensorView dgates,
                                     ConstTensorView aux_dprobs, int rows, int experts,
                                     int top_k) {
  Fp32Operands f;
  float* dl = f.out(dlogits, true);
  const float* p = fp32_view(probs, "router probs");
  const int32_t* c = i32_view(chosen, "router choices");
  const float* g = fp32_view(gates, "router gates");
  const float* dg = fp32_view(dgates, "router gate gradients");
  const float* aux = fp32_view(aux_dprobs, "auxiliary probability gradients");
  for (int n = 0; n < rows; ++n) {
    float* row = dl + static_cast<std::size_t>(n) * experts;
    const std::size_t k = static_cast<std::size_t>(n) * top_k;
    const float* pn = p + static_cast<std::size_t>(n) * experts;
    kmath::moe_route_backward_row(router == plan::MoeRouter::sigmoid_bias, pn, c + k, g + k,
                                  dg + k, aux, experts, top_k,
                                  [row](int e, float value) { row[e] += value; });
  }
}

void CpuBackend::moe_dispatch_forward(TensorView out, ConstTensorView inp,
                                      ConstTensorView source_rows, int routed_rows,
                                      int channels) {
  Fp32Operands f;
  const float* x = f.in(inp);
  float* y = f.out(out, false);
  const int32_t* source = i32_view(source_rows, "dispatch source rows");
  for (int m = 0; m < routed_rows; ++m)
    std::copy_n(x + static_cast<std::size_t>(source[m]) * channels, channels,
                y + static_cast<std::size_t>(m) * channels);
}

void CpuBackend::moe_dispatch_backward(TensorView dinp, ConstTensorView dout,
                                       ConstTensorView slot_rows, int rows, int top_k,
                                       int channels) {
  Fp32Operands f;
  const float* dy = f.in(dout);
  float* dx = f.out(dinp, true);
  const int32_t* slots = i32_view(slot_rows, "combine slot rows");
  for (int n = 0; n < rows; ++n)
    for (int j = 0; j < top_k; ++j) {
      const int32_t m = slots[static_cast<std::size_t>(n) * top_k + j];
      if (m < 0) continue;
      const float* src = dy + static_cast<std::size_t>(m) * channels;
      float* dst = dx + static_cast<std::size_t>(n) * channels;
      for (int c = 0; c < channels; ++c) dst[c] += src[c];
    }
}

void CpuBackend::moe_combine_forward(TensorView out, ConstTensorView expert_out,
                                     ConstTensorView gates, ConstTensorView slot_rows, int rows,
                                     int top_k, int channels) {
  Fp32Operands f;
  const float* y = f.in(expert_out);
  float* o = f.out(out, true);
  const float* g = fp32_view(gates, "router gates");
  const int32_t* slots = i32_view(slot_rows, "combine slot rows");
  auto routed = [y, channels](int m, int c) { return y[static_cast<std::size_t>(m) * channels + c]; };
  for (int n = 0; n < rows; ++n) {
    const std::size_t k = static_cast<std::size_t>(n) * top_k;
    for (int c = 0; c < channels; ++c)
      o[static_cast<std::size_t>(n) * channels + c] +=
          kmath::moe_combine_value(routed, g + k, slots + k, top_k, c);
  }
}

void CpuBackend::moe_combine_backward(TensorView dexpert_out, TensorView dgates,
                                      ConstTensorView dout, ConstTensorView expert_out,
                                      ConstTensorView gates, ConstTensorView slot_rows, int rows,
                                      int top_k, int channels) {
  Fp32Operands f;
  const float* d = f.in(dout);
  const float* y = f.in(expert_out);
  float* dy = f.out(dexpert_out, true);
  float* dg = fp32_view(dgates, "router gate gradients");
  const float* g = fp32_view(gates, "router gates");
  const int32_t* slots = i32_view(slot_rows, "combine slot rows");
  for (int n = 0; n < rows; ++n)
    for (int j = 0; j < top_k; ++j) {
      const std::size_t slot = static_cast<std::size_t>(n) * top_k + j;
      const int32_t m = slots[slot];
      if (m < 0) continue;
      const float* dn = d + static_cast<std::size_t>(n) * channels;
      const float* ym = y + static_cast<std::size_t>(m) * channels;
      float* dym = dy + static_cast<std::size_t>(m) * channels;
      for (int c = 0; c < channels; ++c) dym[c] += g[slot] * dn[c];
      dg[slot] += kmath::moe_gate_gradient([dn](int c) { return dn[c]; },
                                           [ym](int c) { return ym[c]; }, channels);
    }
}

}  // namespace whale::exec::cpu

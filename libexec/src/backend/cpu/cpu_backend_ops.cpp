// File: cpu_backend_ops.cpp
// The CPU backend's compute ops: each lends its operands to the fp32 kernel (cpu_dense.cpp,
// cpu_norm_activation.cpp, cpu_attention.cpp, cpu_embedding_loss.cpp, cpu_optimizer.cpp)
// through Fp32Operands, so bf16 and fp16 tensors compute in fp32 and round their outputs once,
// and fp32 tensors run the kernels as they are.
#include <cmath>
#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_convert.h"
#include "backend/dropout_scalars.h"

namespace whale::exec::cpu {
namespace {

const int32_t* indices(ConstTensorView view) {
  if (view.dtype != DType::i32)
    throw std::invalid_argument(std::string("cpu backend: token or target tensor of dtype ") +
                                dtype_name(view.dtype) + ", expected i32");
  return view.as<int32_t>();
}

/// The floats of an fp32-only tensor (parameter gradients, statistics, optimizer state).
const float* fp32_only(ConstTensorView view, const char* what) {
  if (!view.empty() && view.dtype != DType::fp32)
    throw std::invalid_argument(std::string("cpu backend: ") + what + " must be fp32, got " +
                                dtype_name(view.dtype));
  return view.as<float>();
}
float* fp32_only(TensorView view, const char* what) {
  fp32_only(ConstTensorView(view), what);
  return view.as<float>();
}

}  // namespace

void CpuBackend::matmul(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a,
                        ConstTensorView b, TensorView c, bool accumulate) {
  Fp32Operands f;
  kernels_.matmul(trans_a, trans_b, m, n, k, f.in(a), f.in(b), f.out(c, accumulate), accumulate);
}

void CpuBackend::linear_forward(TensorView out, ConstTensorView inp, ConstTensorView weight,
                                ConstTensorView bias, int rows, int in_channels, int out_channels) {
  Fp32Operands f;
  float* y = f.out(out, false);
  kernels_.matmul(false, true, rows, out_channels, in_channels, f.in(inp), f.in(weight), y, false);
  if (!bias.empty()) {  // GEMM + bias in fp32, one rounding (a fused epilogue on GPUs)
    kernels_.bias_add_forward(y, f.in(bias), rows, out_channels);
  }
}

void CpuBackend::linear_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                                 ConstTensorView dout, ConstTensorView inp, ConstTensorView weight,
                                 int rows, int in_channels, int out_channels) {
  Fp32Operands f;
  kernels_.linear_backward(f.out(dinp, true), fp32_only(dweight, "dweight"),
                           fp32_only(dbias, "dbias"), f.in(dout), f.in(inp), f.in(weight), rows,
                           in_channels, out_channels);
}

void CpuBackend::bias_add_forward(TensorView out, ConstTensorView bias, int rows, int channels) {
  Fp32Operands f;
  kernels_.bias_add_forward(f.out(out, true), f.in(bias), rows, channels);
}

void CpuBackend::bias_add_backward(TensorView dbias, ConstTensorView dout, int rows, int channels) {
  Fp32Operands f;
  kernels_.bias_add_backward(fp32_only(dbias, "dbias"), f.in(dout), rows, channels);
}

void CpuBackend::add_forward(TensorView out, ConstTensorView a, ConstTensorView b,
                             std::size_t count) {
  Fp32Operands f;
  const float* x = f.in(a);
  const float* y = f.in(b);
  kernels_.add_forward(f.out(out, false), x, y, count);
}

void CpuBackend::add_backward(TensorView da, TensorView db, ConstTensorView dout,
                              std::size_t count) {
  Fp32Operands f;
  kernels_.add_backward(f.out(da, true), f.out(db, true), f.in(dout), count);
}

void CpuBackend::layernorm_forward(TensorView out, TensorView mean, TensorView rstd,
                                   ConstTensorView inp, ConstTensorView weight,
                                   ConstTensorView bias, int rows, int channels) {
  Fp32Operands f;
  kernels_.layernorm_forward(f.out(out, false), fp32_only(mean, "mean"), fp32_only(rstd, "rstd"),
                             f.in(inp), f.in(weight), f.in(bias), rows, channels);
}

void CpuBackend::layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                                    ConstTensorView dout, ConstTensorView inp,
                                    ConstTensorView weight, ConstTensorView mean,
                                    ConstTensorView rstd, int rows, int channels) {
  Fp32Operands f;
  kernels_.layernorm_backward(f.out(dinp, true), fp32_only(dweight, "dweight"),
                              fp32_only(dbias, "dbias"), f.in(dout), f.in(inp), f.in(weight),
                              f.in(mean), f.in(rstd), rows, channels);
}

void CpuBackend::dropout(TensorView data, const DropoutSite& site, int64_t first_row, int rows,
                         int channels) {
  if (!site.active() || rows == 0) return;
  Fp32Operands f;
  kernels_.dropout(f.out(data, true), dropout_scalars(site), static_cast<uint64_t>(first_row), rows,
                   channels);
}

void CpuBackend::gelu_forward(TensorView out, ConstTensorView inp, std::size_t count) {
  Fp32Operands f;
  const float* x = f.in(inp);
  kernels_.gelu_forward(f.out(out, false), x, count);
}

void CpuBackend::gelu_backward(TensorView dinp, ConstTensorView inp, ConstTensorView dout,
                               std::size_t count) {
  Fp32Operands f;
  kernels_.gelu_backward(f.out(dinp, true), f.in(inp), f.in(dout), count);
}

void CpuBackend::rmsnorm_forward(TensorView out, TensorView rstd, ConstTensorView inp,
                                 ConstTensorView weight, int rows, int channels) {
  Fp32Operands f;
  kernels_.rmsnorm_forward(f.out(out, false), fp32_only(rstd, "rstd"), f.in(inp), f.in(weight),
                           rows, channels);
}

void CpuBackend::rmsnorm_backward(TensorView dinp, TensorView dweight, ConstTensorView dout,
                                  ConstTensorView inp, ConstTensorView weight,
                                  ConstTensorView rstd, int rows, int channels) {
  Fp32Operands f;
  kernels_.rmsnorm_backward(f.out(dinp, true), fp32_only(dweight, "dweight"), f.in(dout),
                            f.in(inp), f.in(weight), f.in(rstd), rows, channels);
}

void CpuBackend::swiglu_forward(TensorView out, ConstTensorView gate, ConstTensorView up,
                                std::size_t count) {
  Fp32Operands f;
  const float* g = f.in(gate);
  const float* u = f.in(up);
  kernels_.swiglu_forward(f.out(out, false), g, u, count);
}

void CpuBackend::swiglu_backward(TensorView dgate, TensorView dup, ConstTensorView gate,
                                 ConstTensorView up, ConstTensorView dout, std::size_t count) {
  Fp32Operands f;
  kernels_.swiglu_backward(f.out(dgate, true), f.out(dup, true), f.in(gate), f.in(up),
                           f.in(dout), count);
}

void CpuBackend::attention_forward(TensorView out, TensorView probs, ConstTensorView qkv, int batch,
                                   int sequence, int heads, int kv_heads, int head_size,
                                   const AttentionDropout& dropout) {
  Fp32Operands f;
  kernels_.attention_forward(f.out(out, false), f.out(probs, false), f.in(qkv), batch, sequence,
                             heads, kv_heads, head_size, attention_dropout_scalars(dropout));
}

void CpuBackend::attention_backward(TensorView dqkv, ConstTensorView dout, ConstTensorView qkv,
                                    ConstTensorView probs, int batch, int sequence, int heads,
                                    int kv_heads, int head_size, const AttentionDropout& dropout) {
  Fp32Operands f;
  kernels_.attention_backward(f.out(dqkv, true), f.in(dout), f.in(qkv), f.in(probs), batch,
                              sequence, heads, kv_heads, head_size,
                              attention_dropout_scalars(dropout));
}

void CpuBackend::rope_forward(TensorView data, int batch, int sequence, int row_channels,
                              int heads, int head_size, double theta) {
  Fp32Operands f;
  kernels_.rope(f.out(data, true), batch, sequence, row_channels, heads, head_size, theta, false);
}

void CpuBackend::rope_backward(TensorView grad, int batch, int sequence, int row_channels,
                               int heads, int head_size, double theta) {
  Fp32Operands f;
  kernels_.rope(f.out(grad, true), batch, sequence, row_channels, heads, head_size, theta, true);
}

void CpuBackend::embedding_forward(TensorView out, ConstTensorView tokens, ConstTensorView wte,
                                   ConstTensorView wpe, int batch, int sequence, int channels) {
  Fp32Operands f;
  kernels_.embedding_forward(f.out(out, false), indices(tokens), f.in(wte), f.in(wpe), batch,
                             sequence, channels);
}

void CpuBackend::embedding_backward(TensorView dwte, TensorView dwpe, ConstTensorView dout,
                                    ConstTensorView tokens, int batch, int sequence, int channels) {
  Fp32Operands f;
  kernels_.embedding_backward(fp32_only(dwte, "dwte"), fp32_only(dwpe, "dwpe"), f.in(dout),
                              indices(tokens), batch, sequence, channels);
}

double CpuBackend::cross_entropy_forward(ConstTensorView logits, ConstTensorView targets, int rows,
                                         int vocabulary) {
  Fp32Operands f;
  return kernels_.cross_entropy_forward(f.in(logits), indices(targets), rows, vocabulary);
}

void CpuBackend::cross_entropy_backward(TensorView dlogits, ConstTensorView logits,
                                        ConstTensorView targets, int rows, int vocabulary,
                                        double scale) {
  Fp32Operands f;
  kernels_.cross_entropy_backward(f.out(dlogits, true), f.in(logits), indices(targets), rows,
                                  vocabulary, scale, true);
}

void CpuBackend::cross_entropy_backward_in_place(TensorView logits, ConstTensorView targets,
                                                 int rows, int vocabulary, double scale) {
  Fp32Operands f;
  float* values = f.out(logits, true);  // read, then overwritten row by row
  kernels_.cross_entropy_backward(values, values, indices(targets), rows, vocabulary, scale, false);
}

void CpuBackend::cross_entropy_shard_statistics(ConstTensorView logits, ConstTensorView targets,
                                                int rows, int columns, TensorView statistics) {
  Fp32Operands f;
  kernels_.cross_entropy_shard_statistics(f.in(logits), indices(targets), rows, columns,
                                          fp32_only(statistics, "statistics"));
}

void CpuBackend::cross_entropy_shard_backward_in_place(TensorView logits, ConstTensorView targets,
                                                       ConstTensorView log_sum_exp, int rows,
                                                       int columns, double scale) {
  Fp32Operands f;
  kernels_.cross_entropy_shard_backward(f.out(logits, true), indices(targets), f.in(log_sum_exp),
                                        rows, columns, scale);
}

void CpuBackend::adamw_update(TensorView param, ConstTensorView grad, TensorView m, TensorView v,
                              std::size_t count, double lr, double beta1, double beta2, double eps,
                              double weight_decay, int step) {
  kernels_.adamw_update(fp32_only(param, "param"), fp32_only(grad, "grad"), fp32_only(m, "m"),
                        fp32_only(v, "v"), count, lr, beta1, beta2, eps, weight_decay, step);
}

void CpuBackend::sgd_update(TensorView param, ConstTensorView grad, TensorView momentum_buffer,
                            std::size_t count, double lr, double momentum, double weight_decay) {
  kernels_.sgd_update(fp32_only(param, "param"), fp32_only(grad, "grad"),
                      fp32_only(momentum_buffer, "momentum_buffer"), count, lr, momentum, weight_decay);
}

void CpuBackend::scale(TensorView data, double factor) {
  Fp32Operands f;
  float* x = f.out(data, true);
  const float s = static_cast<float>(factor);
  for (std::size_t i = 0; i < data.count; ++i) x[i] *= s;
}

double CpuBackend::sum_of_squares(const std::vector<ConstTensorView>& tensors) {
  // Per tensor, chunks of a fixed size summed in parallel, then the chunks' sums in order.
  constexpr std::ptrdiff_t kChunk = 4096;
  double total = 0;
  for (ConstTensorView t : tensors) {
    const float* x = fp32_only(t, "sum_of_squares");
    const auto n = static_cast<std::ptrdiff_t>(t.count);
    std::vector<double> partials(static_cast<std::size_t>((n + kChunk - 1) / kChunk), 0.0);
    pool_.parallel_for(static_cast<std::ptrdiff_t>(partials.size()), [&](std::ptrdiff_t c) {
      double sum = 0;
      for (std::ptrdiff_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) sum += double{x[i]} * x[i];
      partials[static_cast<std::size_t>(c)] = sum;
    });
    for (double p : partials) total += p;
  }
  return total;
}

bool CpuBackend::has_non_finite(ConstTensorView data) {
  Fp32Operands f;
  const float* x = f.in(data);
  bool found = false;
  for (std::size_t i = 0; i < data.count; ++i) found |= !std::isfinite(x[i]);
  return found;
}

}  // namespace whale::exec::cpu

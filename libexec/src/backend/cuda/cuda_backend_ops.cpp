// File: cuda_backend_ops.cpp
// The CUDA backend's ops: GEMMs through cuBLASLt (bias fused as an epilogue), everything else
// through the kernels of cuda_kernels.h, instantiated for the tensors' dtype, all on the
// compute stream (see cuda_backend_impl.h and the contracts in backend.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_expect_dtype.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/dropout_scalars.h"
#include "backend/gpu_host/gemm_layout.h"
#include "backend/gpu_host/token_buckets.h"
#include "backend/kernel_math/attention_saved_state.h"
#include "backend/kernel_math/launch_geometry.h"

namespace whale::exec::cuda {
namespace {

/// Calls op(T{}) with T the storage type of `dtype` (float, __nv_bfloat16, __half).
template <class Op>
void by_dtype(DType dtype, const char* what, Op op) {
  switch (dtype) {
    case DType::fp32: op(float{}); return;
    case DType::bf16: op(__nv_bfloat16{}); return;
    case DType::fp16: op(__half{}); return;
    case DType::i32: break;
  }
  throw std::invalid_argument(std::string("CUDA backend ") + what + ": a float dtype, got " +
                              dtype_name(dtype));
}

GemmDtype gemm_dtype(DType dtype) {
  switch (dtype) {
    case DType::bf16: return GemmDtype::kBF16;
    case DType::fp16: return GemmDtype::kF16;
    default: return GemmDtype::kF32;
  }
}

/// Copies `rows` rows of `row_bytes` bytes from `source` (rows `source_stride_bytes` apart) to
/// `target` (rows `target_stride_bytes` apart), device to device, on `stream`.
void copy_rows(void* target, std::size_t target_stride_bytes, const void* source,
               std::size_t source_stride_bytes, std::size_t row_bytes, int rows,
               cudaStream_t stream) {
  WHALE_CUDA_CHECK(cudaMemcpy2DAsync(target, target_stride_bytes, source, source_stride_bytes,
                                     row_bytes, static_cast<std::size_t>(rows),
                                     cudaMemcpyDeviceToDevice, stream));
}

template <class T>
T* data(TensorView v) { return v.as<T>(); }
template <class T>
const T* data(ConstTensorView v) { return v.as<T>(); }

}  // namespace

void CudaBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a,
                       ConstTensorView b, TensorView c, bool accumulate, ConstTensorView bias) {
  if (m == 0 || n == 0) return;
  expect_dtype(b, a.dtype, "matmul b");
  if (k == 0) {  // an empty product: c = 0 (+ bias), or c unchanged when accumulating
    if (!accumulate) fill_zero(c.slice(0, static_cast<std::size_t>(m) * n), Stream::compute);
    if (!bias.empty()) bias_add_forward(c, bias, m, n);
    return;
  }
  GemmCall call;
  call.dtype = gemm_dtype(a.dtype);
  call.out_dtype = gemm_dtype(c.dtype);
  call.tf32 = options_.tf32;
  call.trans_a = trans_a;
  call.trans_b = trans_b;
  call.accumulate = accumulate;
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = a.data;
  call.b = b.data;
  call.c = c.data;
  if (!bias.empty()) {
    expect_dtype(bias, c.dtype, "linear bias");
    call.epilogue = gpu::GemmEpilogue::kBias;
    call.bias = bias.data;
  }
  // A large product with a size that is not a whole number of 16-byte vectors (a 50257-entry
  // vocabulary) runs at padded sizes on zero-padded copies, so that cuBLASLt may use its
  // vectorized tensor-core algorithms; the padding adds zeros to every sum, and the rows and
  // columns of c past (m, n) are dropped.
  const int in_bytes = static_cast<int>(element_bytes(a.dtype));
  const int out_bytes = static_cast<int>(element_bytes(c.dtype));
  const gpu::GemmDims padded = gpu::padded_gemm_dims({m, n, k}, in_bytes, out_bytes);
  std::optional<Scratch> a_padded, b_padded, c_padded, bias_padded;
  // The row-major (rows, cols) matrix at data, or its copy as (padded_rows, padded_cols) with
  // zeros past it (left unset when !copy_in: an output the product overwrites whole).
  const auto stage = [&](const void* data, int rows, int cols, int padded_rows, int padded_cols,
                         int bytes, bool copy_in, std::optional<Scratch>& copy) -> void* {
    if (rows == padded_rows && cols == padded_cols) return const_cast<void*>(data);
    const std::size_t row_bytes = static_cast<std::size_t>(cols) * bytes;
    const std::size_t padded_row_bytes = static_cast<std::size_t>(padded_cols) * bytes;
    copy.emplace(*arena_, static_cast<std::size_t>(padded_rows) * padded_row_bytes);
    auto* base = copy->as<char>();
    if (copy_in) {
      copy_rows(base, padded_row_bytes, data, row_bytes, row_bytes, rows, compute());
      if (padded_cols > cols)
        WHALE_CUDA_CHECK(cudaMemset2DAsync(base + row_bytes, padded_row_bytes, 0,
                                           padded_row_bytes - row_bytes, rows, compute()));
      if (padded_rows > rows)
        WHALE_CUDA_CHECK(cudaMemsetAsync(base + rows * padded_row_bytes, 0,
                                         (padded_rows - rows) * padded_row_bytes, compute()));
    }
    return base;
  };
  if (trans_a)
    call.a = stage(a.data, k, m, padded.k, padded.m, in_bytes, true, a_padded);
  else
    call.a = stage(a.data, m, k, padded.m, padded.k, in_bytes, true, a_padded);
  if (trans_b)
    call.b = stage(b.data, n, k, padded.n, padded.k, in_bytes, true, b_padded);
  else
    call.b = stage(b.data, k, n, padded.k, padded.n, in_bytes, true, b_padded);
  call.c = stage(c.data, m, n, padded.m, padded.n, out_bytes, accumulate, c_padded);
  if (call.bias != nullptr) call.bias = stage(call.bias, 1, n, 1, padded.n, out_bytes, true, bias_padded);
  call.m = padded.m;
  call.n = padded.n;
  call.k = padded.k;
  gemm_->run(compute(), call);
  if (c_padded)
    copy_rows(c.data, static_cast<std::size_t>(n) * out_bytes, call.c,
              static_cast<std::size_t>(padded.n) * out_bytes, static_cast<std::size_t>(n) * out_bytes, m,
              compute());
}

void CudaBackend::matmul(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a,
                         ConstTensorView b, TensorView c, bool accumulate) {
  gemm(trans_a, trans_b, m, n, k, a, b, c, accumulate, {});
}

void CudaBackend::linear_forward(TensorView out, ConstTensorView inp, ConstTensorView weight,
                                 ConstTensorView bias, int rows, int in_channels, int out_channels) {
  gemm(false, true, rows, out_channels, in_channels, inp, weight, out, false, bias);
}

void CudaBackend::linear_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                                  ConstTensorView dout, ConstTensorView inp, ConstTensorView weight,
                                  int rows, int in_channels, int out_channels) {
  if (!dinp.empty()) gemm(false, false, rows, in_channels, out_channels, dout, weight, dinp, true, {});
  gemm(true, false, out_channels, in_channels, rows, dout, inp, dweight, true, {});
  // The bias gradient by the column-sum kernel, not cuBLASLt's BGRADB epilogue: BGRADB
  // overwrites where the contract adds, and the kernel's double sums equal the CPU's bits.
  if (!dbias.empty()) bias_add_backward(dbias, dout, rows, out_channels);
}

void CudaBackend::bias_add_forward(TensorView out, ConstTensorView bias, int rows, int channels) {
  by_dtype(out.dtype, "bias_add_forward", [&](auto t) {
    using T = decltype(t);
    cuda::bias_add_forward(compute(), data<T>(out), data<T>(bias), rows, channels);
  });
}

void CudaBackend::bias_add_backward(TensorView dbias, ConstTensorView dout, int rows, int channels) {
  expect_dtype(dbias, DType::fp32, "bias gradient");
  const Scratch partials(*arena_, kmath::column_partials_count(rows, channels) * sizeof(double));
  by_dtype(dout.dtype, "bias_add_backward", [&](auto t) {
    using T = decltype(t);
    cuda::bias_add_backward(compute(), data<float>(dbias), data<T>(dout), rows, channels,
                            partials.as<double>());
  });
}

void CudaBackend::add_forward(TensorView out, ConstTensorView a, ConstTensorView b, std::size_t count) {
  by_dtype(out.dtype, "add_forward", [&](auto t) {
    using T = decltype(t);
    cuda::add_forward(compute(), data<T>(out), data<T>(a), data<T>(b), count);
  });
}

void CudaBackend::add_backward(TensorView da, TensorView db, ConstTensorView dout, std::size_t count) {
  for (TensorView d : {da, db})
    if (!d.empty())
      by_dtype(d.dtype, "add_backward", [&](auto t) {
        using T = decltype(t);
        cuda::accumulate(compute(), data<T>(d), data<T>(dout), count);
      });
}

void CudaBackend::cast(TensorView dst, ConstTensorView src, Stream stream) {
  if (dst.count != src.count) throw std::invalid_argument("CUDA backend cast: counts differ");
  by_dtype(dst.dtype, "cast", [&](auto d) {
    using D = decltype(d);
    by_dtype(src.dtype, "cast", [&](auto s) {
      using S = decltype(s);
      if constexpr (std::is_same_v<D, S>) {
        copy(dst, src, stream);
      } else if constexpr (std::is_same_v<D, float> || std::is_same_v<S, float>) {
        cuda::cast(cuda_stream(stream), data<D>(dst), data<S>(src), src.count);
      } else {  // bf16 <-> fp16: through fp32, which holds both exactly
        const Scratch wide = scratch_on(stream, src.count * sizeof(float));
        cuda::cast(cuda_stream(stream), wide.as<float>(), data<S>(src), src.count);
        cuda::cast(cuda_stream(stream), data<D>(dst), wide.as<const float>(), src.count);
      }
    });
  });
}

void CudaBackend::layernorm_forward(TensorView out, TensorView mean, TensorView rstd,
                                    ConstTensorView inp, ConstTensorView weight,
                                    ConstTensorView bias, int rows, int channels) {
  expect_dtype(mean, DType::fp32, "layernorm mean");
  expect_dtype(rstd, DType::fp32, "layernorm rstd");
  by_dtype(out.dtype, "layernorm_forward", [&](auto t) {
    using T = decltype(t);
    cuda::layernorm_forward(compute(), data<T>(out), data<float>(mean), data<float>(rstd),
                            data<T>(inp), data<T>(weight), data<T>(bias), rows, channels);
  });
}

void CudaBackend::layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                                     ConstTensorView dout, ConstTensorView inp,
                                     ConstTensorView weight, ConstTensorView mean,
                                     ConstTensorView rstd, int rows, int channels) {
  expect_dtype(dweight, DType::fp32, "layernorm weight gradient");
  expect_dtype(dbias, DType::fp32, "layernorm bias gradient");
  const Scratch partials(*arena_, kmath::column_partials_count(rows, channels) * sizeof(double));
  by_dtype(dinp.dtype, "layernorm_backward", [&](auto t) {
    using T = decltype(t);
    cuda::layernorm_backward(compute(), data<T>(dinp), data<float>(dweight), data<float>(dbias),
                             data<T>(dout), data<T>(inp), data<T>(weight), data<float>(mean),
                             data<float>(rstd), rows, channels, partials.as<double>());
  });
}

void CudaBackend::dropout(TensorView data_view, const DropoutSite& site, int64_t first_row, int rows,
                          int channels) {
  if (!site.active() || rows == 0) return;
  by_dtype(data_view.dtype, "dropout", [&](auto t) {
    using T = decltype(t);
    cuda::dropout(compute(), data<T>(data_view), dropout_scalars(site), static_cast<uint64_t>(first_row),
                  rows, channels);
  });
}

void CudaBackend::gelu_forward(TensorView out, ConstTensorView inp, std::size_t count) {
  by_dtype(out.dtype, "gelu_forward", [&](auto t) {
    using T = decltype(t);
    cuda::gelu_forward(compute(), data<T>(out), data<T>(inp), count);
  });
}

void CudaBackend::gelu_backward(TensorView dinp, ConstTensorView inp, ConstTensorView dout,
                                std::size_t count) {
  by_dtype(dinp.dtype, "gelu_backward", [&](auto t) {
    using T = decltype(t);
    cuda::gelu_backward(compute(), data<T>(dinp), data<T>(inp), data<T>(dout), count);
  });
}

void CudaBackend::rmsnorm_forward(TensorView out, TensorView rstd, ConstTensorView inp,
                                  ConstTensorView weight, int rows, int channels) {
  expect_dtype(rstd, DType::fp32, "rmsnorm rstd");
  by_dtype(out.dtype, "rmsnorm_forward", [&](auto t) {
    using T = decltype(t);
    cuda::rmsnorm_forward(compute(), data<T>(out), data<float>(rstd), data<T>(inp),
                          data<T>(weight), rows, channels);
  });
}

void CudaBackend::rmsnorm_backward(TensorView dinp, TensorView dweight, ConstTensorView dout,
                                   ConstTensorView inp, ConstTensorView weight,
                                   ConstTensorView rstd, int rows, int channels) {
  expect_dtype(dweight, DType::fp32, "rmsnorm weight gradient");
  const Scratch partials(*arena_, kmath::column_partials_count(rows, channels) * sizeof(double));
  by_dtype(dinp.dtype, "rmsnorm_backward", [&](auto t) {
    using T = decltype(t);
    cuda::rmsnorm_backward(compute(), data<T>(dinp), data<float>(dweight), data<T>(dout),
                           data<T>(inp), data<T>(weight), data<float>(rstd), rows, channels,
                           partials.as<double>());
  });
}

void CudaBackend::swiglu_forward(TensorView out, ConstTensorView gate, ConstTensorView up,
                                 std::size_t count) {
  by_dtype(out.dtype, "swiglu_forward", [&](auto t) {
    using T = decltype(t);
    cuda::swiglu_forward(compute(), data<T>(out), data<T>(gate), data<T>(up), count);
  });
}

void CudaBackend::swiglu_backward(TensorView dgate, TensorView dup, ConstTensorView gate,
                                  ConstTensorView up, ConstTensorView dout, std::size_t count) {
  by_dtype(dgate.dtype, "swiglu_backward", [&](auto t) {
    using T = decltype(t);
    cuda::swiglu_backward(compute(), data<T>(dgate), data<T>(dup), data<T>(gate), data<T>(up),
                          data<T>(dout), count);
  });
}

// Attention: the flash kernels never materialise the probabilities. Forward saves in `probs`
// each row's log-sum-exp and a copy of the output (kmath::attention_saved_state); backward
// recomputes the scores from them, without re-running the forward.
namespace {
kmath::AttentionSavedState saved_state_of(ConstTensorView probs, DType act, int batch,
                                          int sequence, int heads, int head_size,
                                          const char* op) {
  const kmath::AttentionSavedState state =
      kmath::attention_saved_state(batch, sequence, heads, head_size, element_bytes(act));
  if (probs.bytes() < state.bytes)
    throw std::invalid_argument(std::string("CUDA ") + op + ": probs holds " +
                                std::to_string(probs.bytes()) + " bytes, the saved state needs " +
                                std::to_string(state.bytes) +
                                " (size it with Backend::attention_saved_count)");
  return state;
}
}  // namespace

std::size_t CudaBackend::attention_saved_count(int batch, int sequence, int heads, int head_size,
                                               DType act) const {
  const std::size_t act_bytes = element_bytes(act);
  return kmath::attention_saved_elements(
      kmath::attention_saved_state(batch, sequence, heads, head_size, act_bytes), act_bytes);
}

void CudaBackend::attention_forward(TensorView out, TensorView probs, ConstTensorView qkv,
                                    int batch, int sequence, int heads, int kv_heads,
                                    int head_size, const AttentionDropout& dropout) {
  const kmath::AttentionSavedState state =
      saved_state_of(probs, out.dtype, batch, sequence, heads, head_size, "attention_forward");
  by_dtype(out.dtype, "attention_forward", [&](auto t) {
    using T = decltype(t);
    cuda::attention_forward(compute(), data<T>(out), probs.as<float>(), data<T>(qkv), batch,
                            sequence, heads, kv_heads, head_size, attention_dropout_scalars(dropout));
  });
  const std::size_t out_count = static_cast<std::size_t>(batch) * sequence * heads * head_size;
  copy(TensorView{static_cast<char*>(probs.data) + state.out_offset, out_count, out.dtype},
       out.slice(0, out_count), Stream::compute);
}

void CudaBackend::attention_backward(TensorView dqkv, ConstTensorView dout, ConstTensorView qkv,
                                     ConstTensorView probs, int batch, int sequence,
                                     int heads, int kv_heads, int head_size,
                                     const AttentionDropout& dropout) {
  const kmath::AttentionSavedState state =
      saved_state_of(probs, dqkv.dtype, batch, sequence, heads, head_size, "attention_backward");
  const std::size_t rows = static_cast<std::size_t>(batch) * heads * sequence;
  const Scratch delta(*arena_, rows * sizeof(float));
  const char* saved = static_cast<const char*>(probs.data);
  by_dtype(dqkv.dtype, "attention_backward", [&](auto t) {
    using T = decltype(t);
    cuda::attention_backward(compute(), data<T>(dqkv), data<T>(dout), data<T>(qkv),
                             reinterpret_cast<const T*>(saved + state.out_offset),
                             reinterpret_cast<const float*>(saved), delta.as<float>(), batch,
                             sequence, heads, kv_heads, head_size,
                             attention_dropout_scalars(dropout));
  });
}

void CudaBackend::rope_forward(TensorView data_view, int batch, int sequence, int row_channels,
                               int heads, int head_size, double theta) {
  by_dtype(data_view.dtype, "rope_forward", [&](auto t) {
    using T = decltype(t);
    cuda::rope(compute(), data<T>(data_view), batch, sequence, row_channels, heads, head_size,
               theta, false);
  });
}

void CudaBackend::rope_backward(TensorView grad, int batch, int sequence, int row_channels,
                                int heads, int head_size, double theta) {
  by_dtype(grad.dtype, "rope_backward", [&](auto t) {
    using T = decltype(t);
    cuda::rope(compute(), data<T>(grad), batch, sequence, row_channels, heads, head_size, theta,
               true);
  });
}

void CudaBackend::embedding_forward(TensorView out, ConstTensorView tokens, ConstTensorView wte,
                                    ConstTensorView wpe, int batch, int sequence, int channels) {
  expect_dtype(tokens, DType::i32, "embedding tokens");
  by_dtype(out.dtype, "embedding_forward", [&](auto t) {
    using T = decltype(t);
    cuda::embedding_forward(compute(), data<T>(out), data<int32_t>(tokens), data<T>(wte),
                            data<T>(wpe), batch, sequence, channels);
  });
}

// The token buckets are made on the host: the tokens come down once (a sync of the compute
// stream), the buckets go up as scratch.
void CudaBackend::embedding_backward(TensorView dwte, TensorView dwpe, ConstTensorView dout,
                                     ConstTensorView tokens, int batch, int sequence, int channels) {
  expect_dtype(tokens, DType::i32, "embedding tokens");
  expect_dtype(dwte, DType::fp32, "token embedding gradient");
  if (!dwpe.empty()) expect_dtype(dwpe, DType::fp32, "position embedding gradient");
  const int count = batch * sequence;
  std::vector<int32_t> host(static_cast<std::size_t>(count));
  download(host.data(), tokens.slice(0, host.size()), Stream::compute);
  synchronize(Stream::compute);
  const int vocabulary = static_cast<int>(dwte.count / static_cast<std::size_t>(channels));
  const gpu::TokenBuckets buckets = gpu::token_buckets(host.data(), count, vocabulary);
  const std::size_t ints = buckets.tokens.size() + buckets.offsets.size() + buckets.positions.size();
  const Scratch table(*arena_, ints * sizeof(int32_t));
  std::vector<int32_t> packed(buckets.tokens);
  packed.insert(packed.end(), buckets.offsets.begin(), buckets.offsets.end());
  packed.insert(packed.end(), buckets.positions.begin(), buckets.positions.end());
  WHALE_CUDA_CHECK(cudaMemcpyAsync(table.as<void>(), packed.data(), ints * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, compute()));
  const int32_t* device = table.as<const int32_t>();
  const int distinct = static_cast<int>(buckets.tokens.size());
  by_dtype(dout.dtype, "embedding_backward", [&](auto t) {
    using T = decltype(t);
    cuda::embedding_backward(compute(), data<float>(dwte), data<float>(dwpe), data<T>(dout),
                             device, device + distinct, device + 2 * distinct + 1, distinct,
                             batch, sequence, channels);
  });  // `packed` may go: a copy from pageable host memory returns once the bytes are staged
}

// A target outside [0, V) gives that row a NaN loss (the kernel never reads out of bounds);
// forward reports it as std::out_of_range.
double CudaBackend::cross_entropy_forward(ConstTensorView logits, ConstTensorView targets,
                                          int rows, int vocabulary) {
  expect_dtype(targets, DType::i32, "cross-entropy targets");
  const Scratch losses(*arena_, static_cast<std::size_t>(rows) * sizeof(float));
  by_dtype(logits.dtype, "cross_entropy_forward", [&](auto t) {
    using T = decltype(t);
    cuda::cross_entropy<T>(compute(), losses.as<float>(), nullptr, data<T>(logits),
                           data<int32_t>(targets), rows, vocabulary, 0.0f);
  });
  std::vector<float> host(static_cast<std::size_t>(rows));
  download(host.data(), ConstTensorView(losses.as<float>(), host.size(), DType::fp32), Stream::compute);
  synchronize(Stream::compute);
  double total = 0.0;  // rows in order: deterministic
  for (float loss : host) total += loss;
  if (std::isnan(total))
    throw std::out_of_range("cross-entropy: a target outside vocabulary 0.." +
                            std::to_string(vocabulary - 1) + ", or a NaN logit");
  return total;
}

void CudaBackend::cross_entropy_backward(TensorView dlogits, ConstTensorView logits,
                                         ConstTensorView targets, int rows, int vocabulary,
                                         double scale) {
  expect_dtype(targets, DType::i32, "cross-entropy targets");
  const Scratch losses(*arena_, static_cast<std::size_t>(rows) * sizeof(float));
  by_dtype(dlogits.dtype, "cross_entropy_backward", [&](auto t) {
    using T = decltype(t);
    cuda::cross_entropy<T>(compute(), losses.as<float>(), data<T>(dlogits), data<T>(logits),
                           data<int32_t>(targets), rows, vocabulary, static_cast<float>(scale));
  });
}

// The kernel reads each row whole (and its target logit) before a barrier, then writes each
// element from the thread that read it: the gradient can overwrite the logits.
void CudaBackend::cross_entropy_backward_in_place(TensorView logits, ConstTensorView targets,
                                                  int rows, int vocabulary, double scale) {
  expect_dtype(targets, DType::i32, "cross-entropy targets");
  const Scratch losses(*arena_, static_cast<std::size_t>(rows) * sizeof(float));
  by_dtype(logits.dtype, "cross_entropy_backward_in_place", [&](auto t) {
    using T = decltype(t);
    cuda::cross_entropy<T>(compute(), losses.as<float>(), data<T>(logits), data<T>(logits),
                           data<int32_t>(targets), rows, vocabulary, static_cast<float>(scale),
                           false);
  });
}

void CudaBackend::cross_entropy_shard_statistics(ConstTensorView logits, ConstTensorView targets,
                                                 int rows, int columns, TensorView statistics) {
  expect_dtype(targets, DType::i32, "cross-entropy targets");
  expect_dtype(statistics, DType::fp32, "cross-entropy statistics");
  by_dtype(logits.dtype, "cross_entropy_shard_statistics", [&](auto t) {
    using T = decltype(t);
    cuda::cross_entropy_shard_statistics<T>(compute(), data<float>(statistics), data<T>(logits),
                                            data<int32_t>(targets), rows, columns);
  });
}

void CudaBackend::cross_entropy_shard_backward_in_place(TensorView logits, ConstTensorView targets,
                                                        ConstTensorView log_sum_exp, int rows,
                                                        int columns, double scale) {
  expect_dtype(targets, DType::i32, "cross-entropy targets");
  expect_dtype(log_sum_exp, DType::fp32, "cross-entropy log-sum-exp");
  by_dtype(logits.dtype, "cross_entropy_shard_backward_in_place", [&](auto t) {
    using T = decltype(t);
    cuda::cross_entropy_shard_backward<T>(compute(), data<T>(logits), data<int32_t>(targets),
                                          data<float>(log_sum_exp), rows, columns,
                                          static_cast<float>(scale));
  });
}

void CudaBackend::scale(TensorView data_view, double factor) {
  by_dtype(data_view.dtype, "scale", [&](auto t) {
    using T = decltype(t);
    cuda::scale(compute(), data<T>(data_view), static_cast<float>(factor), data_view.count);
  });
}

bool CudaBackend::has_non_finite(ConstTensorView data_view) {
  const Scratch flag(*arena_, sizeof(int));
  WHALE_CUDA_CHECK(cudaMemsetAsync(flag.as<void>(), 0, sizeof(int), compute()));
  by_dtype(data_view.dtype, "has_non_finite", [&](auto t) {
    using T = decltype(t);
    cuda::find_non_finite(compute(), flag.as<int>(), data<T>(data_view), data_view.count);
  });
  int host = 0;
  WHALE_CUDA_CHECK(cudaMemcpyAsync(&host, flag.as<void>(), sizeof host, cudaMemcpyDeviceToHost, compute()));
  synchronize(Stream::compute);
  return host != 0;
}

// Mixture of experts: the routing plan (slot rows, source rows) is i32 data made on the host.
void CudaBackend::moe_router_forward(plan::MoeRouter router, TensorView probs, TensorView chosen,
                                     TensorView gates, ConstTensorView logits,
                                     ConstTensorView bias, int rows, int experts, int top_k) {
  expect_dtype(probs, DType::fp32, "router probs");
  expect_dtype(chosen, DType::i32, "router choices");
  expect_dtype(gates, DType::fp32, "router gates");
  const bool sigmoid = router == plan::MoeRouter::sigmoid_bias;
  if (sigmoid) expect_dtype(bias, DType::fp32, "router bias");
  by_dtype(logits.dtype, "moe_router_forward", [&](auto t) {
    using T = decltype(t);
    cuda::moe_router_forward(compute(), router, data<float>(probs), data<int32_t>(chosen),
                             data<float>(gates), data<T>(logits),
                             sigmoid ? data<float>(bias) : nullptr, rows, experts, top_k);
  });
}

void CudaBackend::moe_router_backward(plan::MoeRouter router, TensorView dlogits,
                                      ConstTensorView probs, ConstTensorView chosen,
                                      ConstTensorView gates, ConstTensorView dgates,
                                      ConstTensorView aux_dprobs, int rows, int experts,
                                      int top_k) {
  expect_dtype(chosen, DType::i32, "router choices");
  for (ConstTensorView v : {probs, gates, dgates, aux_dprobs})
    expect_dtype(v, DType::fp32, "moe_router_backward");
  by_dtype(dlogits.dtype, "moe_router_backward", [&](auto t) {
    using T = decltype(t);
    cuda::moe_router_backward(compute(), router, data<T>(dlogits), data<float>(probs),
                              data<int32_t>(chosen), data<float>(gates), data<float>(dgates),
                              data<float>(aux_dprobs), rows, experts, top_k);
  });
}

void CudaBackend::moe_dispatch_forward(TensorView out, ConstTensorView inp,
                                       ConstTensorView source_rows, int routed_rows,
                                       int channels) {
  expect_dtype(source_rows, DType::i32, "dispatch source rows");
  by_dtype(out.dtype, "moe_dispatch_forward", [&](auto t) {
    using T = decltype(t);
    cuda::moe_dispatch_forward(compute(), data<T>(out), data<T>(inp),
                               data<int32_t>(source_rows), routed_rows, channels);
  });
}

void CudaBackend::moe_dispatch_backward(TensorView dinp, ConstTensorView dout,
                                        ConstTensorView slot_rows, int rows, int top_k,
                                        int channels) {
  expect_dtype(slot_rows, DType::i32, "combine slot rows");
  by_dtype(dinp.dtype, "moe_dispatch_backward", [&](auto t) {
    using T = decltype(t);
    cuda::moe_dispatch_backward(compute(), data<T>(dinp), data<T>(dout),
                                data<int32_t>(slot_rows), rows, top_k, channels);
  });
}

void CudaBackend::moe_combine_forward(TensorView out, ConstTensorView expert_out,
                                      ConstTensorView gates, ConstTensorView slot_rows, int rows,
                                      int top_k, int channels) {
  expect_dtype(gates, DType::fp32, "router gates");
  expect_dtype(slot_rows, DType::i32, "combine slot rows");
  by_dtype(out.dtype, "moe_combine_forward", [&](auto t) {
    using T = decltype(t);
    cuda::moe_combine_forward(compute(), data<T>(out), data<T>(expert_out), data<float>(gates),
                              data<int32_t>(slot_rows), rows, top_k, channels);
  });
}

void CudaBackend::moe_combine_backward(TensorView dexpert_out, TensorView dgates,
                                       ConstTensorView dout, ConstTensorView expert_out,
                                       ConstTensorView gates, ConstTensorView slot_rows, int rows,
                                       int top_k, int channels) {
  expect_dtype(dgates, DType::fp32, "router gate gradients");
  expect_dtype(gates, DType::fp32, "router gates");
  expect_dtype(slot_rows, DType::i32, "combine slot rows");
  by_dtype(dexpert_out.dtype, "moe_combine_backward", [&](auto t) {
    using T = decltype(t);
    cuda::moe_combine_backward(compute(), data<T>(dexpert_out), data<float>(dgates),
                               data<T>(dout), data<T>(expert_out), data<float>(gates),
                               data<int32_t>(slot_rows), rows, top_k, channels);
  });
}

}  // namespace whale::exec::cuda

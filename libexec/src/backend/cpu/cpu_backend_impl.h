// File: cpu_backend_impl.h
// Private: the CpuBackend class (its ops are defined in cpu_*.cpp, one group per file) and the
// Eigen map types they share.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cstddef>
#include <new>
#include <unordered_map>
#include <vector>

#include "backend/cpu/cpu_parallel.h"
#include "backend/kernel_math/dropout_math.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::cpu {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
/// A row-major view whose rows are `stride` floats apart (a head's columns inside qkv).
using StridedMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

/// Flat element-wise views of backend memory (any alignment).
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

/// Sum of term(0) + ... + term(n - 1) in a fixed order: 16 interleaved partial sums of type
/// Real, then combined in order. Vectorisable, and the same bits whatever the data's addresses
/// (Eigen's own reductions start at the first aligned element, so their order and hence their
/// rounding depend on where the data lies).
template <class Real = float, class Term>
Real ordered_sum(std::size_t n, Term term) {
  constexpr std::size_t kLanes = 16;
  Real lanes[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
  for (std::size_t l = 0; i + l < n; ++l) lanes[l] += term(i + l);
  Real total = 0;
  for (Real lane : lanes) total += lane;
  return total;
}

/// Floats per AVX-512 packet. The element-wise transcendental ops (GELU, softmax) run in
/// 64-byte aligned, zero-padded scratch (AlignedArrayMap) whose length is a whole number of
/// packets, so every element takes Eigen's packet path (scalar and packet tanh/exp differ in the
/// last bits) and its result depends on its value only, not on its address.
constexpr std::size_t kPacketFloats = 16;
inline std::size_t round_up_to_packets(std::size_t n) {
  return (n + kPacketFloats - 1) / kPacketFloats * kPacketFloats;
}
using AlignedArrayMap = Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>;

/// This thread's 64-byte aligned scratch of at least `floats` floats, kept and grown across
/// calls. Explicitly aligned: Eigen's own heap alignment is only 16 or 32 bytes on CPUs without
/// AVX-512, which AlignedArrayMap may not be given.
inline float* thread_aligned_scratch(std::size_t floats) {
  struct Buffer {
    float* data = nullptr;
    std::size_t size = 0;
    ~Buffer() { ::operator delete[](data, std::align_val_t{64}); }
  };
  thread_local Buffer buffer;
  if (buffer.size < floats) {
    ::operator delete[](buffer.data, std::align_val_t{64});
    buffer.data = nullptr;
    buffer.data = static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t{64}));
    buffer.size = floats;
  }
  return buffer.data;
}

/// Copies src[0, n) into `scratch` (64-byte aligned, at least round_up_to_packets(n) floats),
/// zero-pads it to whole packets and returns that padded view.
inline AlignedArrayMap padded_packets(const float* src, std::size_t n, float* scratch) {
  const std::size_t padded = round_up_to_packets(n);
  std::copy(src, src + n, scratch);
  std::fill(scratch + n, scratch + padded, 0.0f);
  return AlignedArrayMap(scratch, static_cast<Eigen::Index>(padded));
}

/// The fp32 kernels of every compute op, on host float pointers (the op's contract in
/// backend.h, with every tensor fp32 and null for an empty view). CpuBackend widens operands of
/// other dtypes to fp32 around them (cpu_backend_ops.cpp).
/// Rows of C per parallel GEMM call in Fp32Kernels::matmul: a multiple of Eigen's register
/// block of rows (3 packets: 48 floats with AVX-512, 24 with AVX2).
constexpr int kMatmulPanelRows = 96;

class Fp32Kernels {
 public:
  /// The kernels split their independent rows, heads or chunks over `pool` (which outlives
  /// them); every result is bit-identical for any pool size.
  explicit Fp32Kernels(WorkerPool& pool) : pool_(pool) {}

  void matmul(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
              float* c, bool accumulate);
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int rows, int in_channels, int out_channels);
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int rows, int in_channels,
                       int out_channels);
  void bias_add_forward(float* out, const float* bias, int rows, int channels);
  void bias_add_backward(float* dbias, const float* dout, int rows, int channels);
  void add_forward(float* out, const float* a, const float* b, std::size_t count);
  void add_backward(float* da, float* db, const float* dout, std::size_t count);
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int rows, int channels);
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int rows, int channels);
  void gelu_forward(float* out, const float* inp, std::size_t count);
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t count);
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int rows,
                       int channels);
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, int rows, int channels);
  void swiglu_forward(float* out, const float* gate, const float* up, std::size_t count);
  void swiglu_backward(float* dgate, float* dup, const float* gate, const float* up,
                       const float* dout, std::size_t count);
  /// data (rows, channels) *= each element's dropout factor (rows first_row..).
  void dropout(float* data, const kmath::DropoutScalars& mask, uint64_t first_row, int rows,
               int channels);
  void attention_forward(float* out, float* probs, const float* qkv, int batch, int sequence,
                         int heads, int kv_heads, int head_size,
                         const kmath::AttentionDropoutScalars& drop);
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs,
                          int batch, int sequence, int heads, int kv_heads, int head_size,
                          const kmath::AttentionDropoutScalars& drop);
  /// rope_forward (inverse = false) or rope_backward (inverse = true), in place.
  void rope(float* data, int batch, int sequence, int row_channels, int heads, int head_size,
            double theta, bool inverse);
  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int batch, int sequence, int channels);
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          int batch, int sequence, int channels);
  double cross_entropy_forward(const float* logits, const int32_t* targets, int rows,
                               int vocabulary);
  /// dlogits += the gradient (accumulate), or = it; without accumulate dlogits may be logits.
  void cross_entropy_backward(float* dlogits, const float* logits, const int32_t* targets, int rows,
                              int vocabulary, double scale, bool accumulate);
  void cross_entropy_shard_statistics(const float* logits, const int32_t* targets, int rows,
                                      int columns, float* statistics);
  void cross_entropy_shard_backward(float* logits, const int32_t* targets,
                                    const float* log_sum_exp, int rows, int columns, double scale);
  void adamw_update(float* param, const float* grad, float* m, float* v, std::size_t count,
                    double lr, double beta1, double beta2, double eps, double weight_decay,
                    int step);
  void sgd_update(float* param, const float* grad, float* momentum_buffer, std::size_t count,
                  double lr, double momentum, double weight_decay);

 private:
  /// dst (C) += column sums of src (N, C): blocks of columns in parallel, each column summing
  /// its rows in order, in double.
  void add_column_sums(float* dst, const float* src, int rows, int channels);

  WorkerPool& pool_;
};

class CpuBackend : public Backend {
 public:
  CpuBackend(DType compute, int threads);
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;
  ~CpuBackend() override;

  const char* name() const override { return "cpu"; }
  DType compute_dtype() const override { return compute_; }
  int threads() const { return threads_; }

  void* allocate(std::size_t bytes) override;
  void release(void* data) override;
  std::size_t peak_memory_bytes() const override { return peak_bytes_; }
  void upload(TensorView device, const void* host, Stream stream) override;
  void download(void* host, ConstTensorView device, Stream stream) override;
  void copy(TensorView dst, ConstTensorView src, Stream stream) override;
  void cast(TensorView dst, ConstTensorView src, Stream stream) override;
  void fill_zero(TensorView data, Stream stream) override;

  // Streams run every call at once, in order: events are plain handles.
  Event create_event() override { return Event{next_event_++}; }
  void destroy_event(Event) override {}
  void record_event(Event, Stream) override {}
  void wait_event(Stream, Event) override {}
  void synchronize(Stream) override {}
  void synchronize() override {}
  void* native_stream(Stream) override { return nullptr; }

  void matmul(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a, ConstTensorView b,
              TensorView c, bool accumulate) override;
  void linear_forward(TensorView out, ConstTensorView inp, ConstTensorView weight,
                      ConstTensorView bias, int rows, int in_channels, int out_channels) override;
  void linear_backward(TensorView dinp, TensorView dweight, TensorView dbias, ConstTensorView dout,
                       ConstTensorView inp, ConstTensorView weight, int rows, int in_channels,
                       int out_channels) override;
  void bias_add_forward(TensorView out, ConstTensorView bias, int rows, int channels) override;
  void bias_add_backward(TensorView dbias, ConstTensorView dout, int rows, int channels) override;
  void add_forward(TensorView out, ConstTensorView a, ConstTensorView b,
                   std::size_t count) override;
  void add_backward(TensorView da, TensorView db, ConstTensorView dout, std::size_t count) override;

  void layernorm_forward(TensorView out, TensorView mean, TensorView rstd, ConstTensorView inp,
                         ConstTensorView weight, ConstTensorView bias, int rows,
                         int channels) override;
  void layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                          ConstTensorView dout, ConstTensorView inp, ConstTensorView weight,
                          ConstTensorView mean, ConstTensorView rstd, int rows,
                          int channels) override;
  void dropout(TensorView data, const DropoutSite& site, int64_t first_row, int rows,
               int channels) override;
  void gelu_forward(TensorView out, ConstTensorView inp, std::size_t count) override;
  void gelu_backward(TensorView dinp, ConstTensorView inp, ConstTensorView dout,
                     std::size_t count) override;

  void rmsnorm_forward(TensorView out, TensorView rstd, ConstTensorView inp,
                       ConstTensorView weight, int rows, int channels) override;
  void rmsnorm_backward(TensorView dinp, TensorView dweight, ConstTensorView dout,
                        ConstTensorView inp, ConstTensorView weight, ConstTensorView rstd,
                        int rows, int channels) override;
  void swiglu_forward(TensorView out, ConstTensorView gate, ConstTensorView up,
                      std::size_t count) override;
  void swiglu_backward(TensorView dgate, TensorView dup, ConstTensorView gate,
                       ConstTensorView up, ConstTensorView dout, std::size_t count) override;
  void moe_router_forward(plan::MoeRouter router, TensorView probs, TensorView chosen,
                          TensorView gates, ConstTensorView logits, ConstTensorView bias,
                          int rows, int experts, int top_k) override;
  void moe_router_backward(plan::MoeRouter router, TensorView dlogits, ConstTensorView probs,
                           ConstTensorView chosen, ConstTensorView gates, ConstTensorView dgates,
                           ConstTensorView aux_dprobs, int rows, int experts,
                           int top_k) override;
  void moe_dispatch_forward(TensorView out, ConstTensorView inp, ConstTensorView source_rows,
                            int routed_rows, int channels) override;
  void moe_dispatch_backward(TensorView dinp, ConstTensorView dout, ConstTensorView slot_rows,
                             int rows, int top_k, int channels) override;
  void moe_combine_forward(TensorView out, ConstTensorView expert_out, ConstTensorView gates,
                           ConstTensorView slot_rows, int rows, int top_k,
                           int channels) override;
  void moe_combine_backward(TensorView dexpert_out, TensorView dgates, ConstTensorView dout,
                            ConstTensorView expert_out, ConstTensorView gates,
                            ConstTensorView slot_rows, int rows, int top_k,
                            int channels) override;

  using Backend::attention_forward;
  using Backend::attention_backward;
  void attention_forward(TensorView out, TensorView probs, ConstTensorView qkv, int batch,
                         int sequence, int heads, int kv_heads, int head_size,
                         const AttentionDropout& dropout) override;
  void attention_backward(TensorView dqkv, ConstTensorView dout, ConstTensorView qkv,
                          ConstTensorView probs, int batch, int sequence, int heads,
                          int kv_heads, int head_size, const AttentionDropout& dropout) override;
  void rope_forward(TensorView data, int batch, int sequence, int row_channels, int heads,
                    int head_size, double theta) override;
  void rope_backward(TensorView grad, int batch, int sequence, int row_channels, int heads,
                     int head_size, double theta) override;

  void embedding_forward(TensorView out, ConstTensorView tokens, ConstTensorView wte,
                         ConstTensorView wpe, int batch, int sequence, int channels) override;
  void embedding_backward(TensorView dwte, TensorView dwpe, ConstTensorView dout,
                          ConstTensorView tokens, int batch, int sequence, int channels) override;
  double cross_entropy_forward(ConstTensorView logits, ConstTensorView targets, int rows,
                               int vocabulary) override;
  void cross_entropy_backward(TensorView dlogits, ConstTensorView logits, ConstTensorView targets,
                              int rows, int vocabulary, double scale) override;
  /// Over the logits themselves, without the base class's (N, V) temporary.
  void cross_entropy_backward_in_place(TensorView logits, ConstTensorView targets, int rows,
                                       int vocabulary, double scale) override;
  void cross_entropy_shard_statistics(ConstTensorView logits, ConstTensorView targets, int rows,
                                      int columns, TensorView statistics) override;
  void cross_entropy_shard_backward_in_place(TensorView logits, ConstTensorView targets,
                                             ConstTensorView log_sum_exp, int rows, int columns,
                                             double scale) override;

  void adamw_update(TensorView param, ConstTensorView grad, TensorView m, TensorView v,
                    std::size_t count, double lr, double beta1, double beta2, double eps,
                    double weight_decay, int step) override;
  void sgd_update(TensorView param, ConstTensorView grad, TensorView momentum_buffer,
                  std::size_t count, double lr, double momentum, double weight_decay) override;
  void scale(TensorView data, double factor) override;
  double sum_of_squares(const std::vector<ConstTensorView>& tensors) override;
  bool has_non_finite(ConstTensorView data) override;

 private:
  DType compute_;
  int threads_;
  WorkerPool pool_;  // threads_ - 1 sleeping workers
  Fp32Kernels kernels_{pool_};
  int next_event_ = 0;
  /// Released blocks by byte count, reused by allocate (training allocates the same shapes
  /// every step; fresh pages would cost a page fault each). Freed in the destructor.
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;
  std::unordered_map<void*, std::size_t> block_bytes_;  // every live or free block
  std::size_t pooled_bytes_ = 0;                        // in free_blocks_
  std::size_t live_bytes_ = 0;   // allocated and not released (pooled blocks excluded)
  std::size_t peak_bytes_ = 0;   // the most live_bytes_ since construction
};

}  // namespace whale::exec::cpu

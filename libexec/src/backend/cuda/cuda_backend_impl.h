// File: cuda_backend_impl.h
// Private: the CudaBackend class: the Backend's ops on one GPU. Compute ops run on the compute
// stream; memory ops on the stream they name; three blocking CUDA streams (compute,
// communication, copy); events are cudaEvent_t. Memory from a CudaArena, GEMMs through
// cuBLASLt, everything else by the kernels of cuda_kernels.h. Memory and streams are defined in
// cuda_backend.cpp, the ops in cuda_backend_ops.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cublaslt_gemm.h"
#include "backend/cuda/cuda_arena.h"
#include "backend/cuda/cuda_backend.h"

namespace whale::exec::cuda {

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  const char* name() const override { return name_.c_str(); }
  DType compute_dtype() const override { return options_.compute_dtype; }
  std::size_t peak_bytes() const { return arena_->peak_bytes(); }
  std::size_t peak_memory_bytes() const override { return peak_bytes(); }

  void* allocate(std::size_t bytes) override;
  void release(void* data) override;
  void upload(TensorView device, const void* host, Stream stream) override;
  void download(void* host, ConstTensorView device, Stream stream) override;
  void copy(TensorView dst, ConstTensorView src, Stream stream) override;
  void cast(TensorView dst, ConstTensorView src, Stream stream) override;
  void fill_zero(TensorView data, Stream stream) override;

  Event create_event() override;
  void destroy_event(Event event) override;
  void record_event(Event event, Stream stream) override;
  void wait_event(Stream stream, Event event) override;
  void synchronize(Stream stream) override;
  void synchronize() override;
  void* native_stream(Stream stream) override { return cuda_stream(stream); }

  void matmul(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a,
              ConstTensorView b, TensorView c, bool accumulate) override;
  void linear_forward(TensorView out, ConstTensorView inp, ConstTensorView weight,
                      ConstTensorView bias, int rows, int in_channels, int out_channels) override;
  void linear_backward(TensorView dinp, TensorView dweight, TensorView dbias, ConstTensorView dout,
                       ConstTensorView inp, ConstTensorView weight, int rows, int in_channels,
                       int out_channels) override;
  void bias_add_forward(TensorView out, ConstTensorView bias, int rows, int channels) override;
  void bias_add_backward(TensorView dbias, ConstTensorView dout, int rows, int channels) override;
  void add_forward(TensorView out, ConstTensorView a, ConstTensorView b, std::size_t count) override;
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
  std::size_t attention_saved_count(int batch, int sequence, int heads, int head_size,
                                    DType act) const override;
  bool attention_recomputes_scores() const override { return true; }
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
  void adamw_update_batch(const std::vector<AdamwSegment>& segments, double lr, double beta1,
                          double beta2, double eps, double weight_decay, int step) override;
  void sgd_update(TensorView param, ConstTensorView grad, TensorView momentum_buffer,
                  std::size_t count, double lr, double momentum, double weight_decay) override;
  void sgd_update_batch(const std::vector<SgdSegment>& segments, double lr, double momentum,
                        double weight_decay) override;
  void scale(TensorView data, double factor) override;
  double sum_of_squares(const std::vector<ConstTensorView>& tensors) override;
  bool has_non_finite(ConstTensorView data) override;

 private:
  /// Arena memory for the duration of one op, released in stream order. On the compute stream
  /// the next op of that stream may reuse it at once. Used on another stream (`user`, with
  /// `compute` and an event of the backend's), its release first makes the compute stream wait
  /// for the work `user` has queued so far, so that no later reuse (a compute scratch, or
  /// allocate's zero fill, which follows the compute stream) overwrites it under that work.
  class Scratch {
   public:
    Scratch(CudaArena& arena, std::size_t bytes) : arena_(arena), data_(arena.allocate(bytes)) {}
    Scratch(CudaArena& arena, std::size_t bytes, cudaStream_t user, cudaStream_t compute,
            cudaEvent_t event)
        : arena_(arena), data_(arena.allocate(bytes)), user_(user), compute_(compute),
          event_(event) {}
    ~Scratch() {  // no throw from a destructor: a failed record leaves the error to the next op
      if (user_ != compute_ && cudaEventRecord(event_, user_) == cudaSuccess)
        cudaStreamWaitEvent(compute_, event_, 0);
      arena_.release(data_);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    template <class T>
    T* as() const { return static_cast<T*>(data_); }

   private:
    CudaArena& arena_;
    void* data_;
    cudaStream_t user_ = nullptr, compute_ = nullptr;  // equal: compute-stream scratch
    cudaEvent_t event_ = nullptr;
  };
  /// A Scratch for work on `stream` (any of the backend's).
  Scratch scratch_on(Stream stream, std::size_t bytes) {
    const cudaStream_t user = cuda_stream(stream);
    if (user == compute()) return Scratch(*arena_, bytes);
    const cudaEvent_t event =
        stream == Stream::communication ? release_events_[0] : release_events_[1];
    return Scratch(*arena_, bytes, user, compute(), event);
  }

  cudaStream_t cuda_stream(Stream stream) const;
  cudaStream_t compute() const { return streams_[0]; }
  /// c = op(a) op(b) [+ c] [+ bias] through cuBLASLt.
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a, ConstTensorView b,
            TensorView c, bool accumulate, ConstTensorView bias);

  CudaBackendOptions options_;
  std::string name_;
  cudaStream_t streams_[3] = {nullptr, nullptr, nullptr};  // compute, communication, copy
  cudaEvent_t release_events_[2] = {nullptr, nullptr};     // see release()
  std::vector<cudaEvent_t> events_;                         // by Event::id; null once destroyed
  std::unique_ptr<CudaArena> arena_;
  void* workspace_ = nullptr;  // cuBLASLt's, from the arena
  std::unique_ptr<LtGemmRunner> gemm_;
  // A multi-tensor optimizer launch's device tables: its tensor entries, then (at
  // chunks_offset) the chunk list; rebuilt only when the segments (addresses, counts) change.
  struct MultiTensorTables {
    std::vector<std::uintptr_t> key;  // per segment: its tensors' addresses, then its count
    void* tables = nullptr;           // from allocate
    std::size_t chunks_offset = 0;    // bytes
    int chunk_count = 0;
  };
  /// The tables of `cache` for segments of `counts` elements whose tensor entries are the
  /// `entry_bytes` at `entries`: uploaded on the compute stream where `key` differs from the
  /// cached one, else those cached. Returns the tables' base (null where no chunk).
  const char* multi_tensor_tables(MultiTensorTables& cache, std::vector<std::uintptr_t> key,
                                  const void* entries, std::size_t entry_bytes,
                                  const std::vector<std::size_t>& counts);
  MultiTensorTables adamw_tables_, sgd_tables_, square_sum_tables_;
};

}  // namespace whale::exec::cuda

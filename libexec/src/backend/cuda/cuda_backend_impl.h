// File: cuda_backend_impl.h
// Private: the CudaBackend class: the Backend's ops on one GPU, in order on one compute stream,
// memory from a CudaArena, GEMMs through cuBLASLt, everything else by the kernels of
// cuda_kernels.h. Its ops are defined in cuda_backend.cpp (memory) and cuda_backend_ops.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

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

  const char* name() const override { return "cuda"; }
  std::size_t peak_bytes() const { return arena_->peak_bytes(); }

  float* allocate(std::size_t count) override;
  void release(float* data) override;
  void upload(float* device, const float* host, std::size_t count) override;
  void download(float* host, const float* device, std::size_t count) override;
  void copy(float* dst, const float* src, std::size_t count) override;
  void fill_zero(float* data, std::size_t count) override;
  void synchronize() override;

  void matmul(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
              float* c, bool accumulate) override;
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int rows, int in_channels, int out_channels) override;
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int rows, int in_channels,
                       int out_channels) override;
  void bias_add_forward(float* out, const float* bias, int rows, int channels) override;
  void bias_add_backward(float* dbias, const float* dout, int rows, int channels) override;
  void add_forward(float* out, const float* a, const float* b, std::size_t count) override;
  void add_backward(float* da, float* db, const float* dout, std::size_t count) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int rows,
                         int channels) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int rows, int channels) override;
  void gelu_forward(float* out, const float* inp, std::size_t count) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout,
                     std::size_t count) override;

  void attention_forward(float* out, float* probs, const float* qkv, int batch, int sequence,
                         int heads, int head_size) override;
  void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs,
                          int batch, int sequence, int heads, int head_size) override;

  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                         int batch, int sequence, int channels) override;
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          int batch, int sequence, int channels) override;
  double cross_entropy_forward(const float* logits, const int32_t* targets, int rows,
                               int vocabulary) override;
  void cross_entropy_backward(float* dlogits, const float* logits, const int32_t* targets,
                              int rows, int vocabulary, double scale) override;

  void adamw_update(float* param, const float* grad, float* m, float* v, std::size_t count,
                    double lr, double beta1, double beta2, double eps, double weight_decay,
                    int step) override;

 private:
  /// Arena memory for the duration of one op, released in stream order (the next op on the
  /// same stream may reuse it).
  class Scratch {
   public:
    Scratch(CudaArena& arena, std::size_t bytes) : arena_(arena), data_(arena.allocate(bytes)) {}
    ~Scratch() { arena_.release(data_); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    template <class T>
    T* as() const { return static_cast<T*>(data_); }

   private:
    CudaArena& arena_;
    void* data_;
  };
  /// `count` host ints copied into scratch device memory.
  std::unique_ptr<Scratch> upload_ints(const int32_t* host, std::size_t count);
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, const float* b,
            float* c, bool accumulate, const float* bias);

  CudaBackendOptions options_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaArena> arena_;
  void* workspace_ = nullptr;  // cuBLASLt's, from the arena
  std::unique_ptr<LtGemmRunner> gemm_;
};

}  // namespace whale::exec::cuda

// File: backend.h
// Backend: the tensor ops of a GPT (forward and backward) on one device's memory. The CPU
// backend (Eigen) implements it; a CUDA backend implements the same table. Callers never
// branch on the device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace whale::exec {

/// Conventions for every op:
/// - Float pointers are the backend's memory (host memory for the CPU backend, device memory
///   for a GPU backend), row-major, with the shape in a comment. Token and target arrays are
///   HOST memory (int32); a GPU backend copies them.
/// - Dimensions: N rows (= B*T tokens), B samples, T sequence, C channels, NH heads, HS head
///   size, V vocabulary.
/// - Every *_backward op ADDS (+=) into each gradient it writes, inputs and parameters alike;
///   callers zero a gradient buffer before its first contribution.
/// - Ops are deterministic: the same inputs give bit-identical outputs.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // ---- memory -------------------------------------------------------------------------
  /// `count` zero-filled floats of backend memory; never null for count > 0.
  virtual float* allocate(std::size_t count) = 0;
  virtual void release(float* data) = 0;
  virtual void upload(float* device, const float* host, std::size_t count) = 0;
  virtual void download(float* host, const float* device, std::size_t count) = 0;
  virtual void copy(float* dst, const float* src, std::size_t count) = 0;
  virtual void fill_zero(float* data, std::size_t count) = 0;
  /// Waits until every op issued so far has finished (a no-op on the CPU).
  virtual void synchronize() = 0;

  // ---- dense algebra ------------------------------------------------------------------
  /// c (m, n) = op(a) * op(b) [+ c when accumulate]; op(a) is (m, k): a is (m, k), or
  /// (k, m) when trans_a; op(b) is (k, n): b is (k, n), or (n, k) when trans_b.
  virtual void matmul(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                      const float* b, float* c, bool accumulate) = 0;
  /// out (N, OC) = inp (N, C) * weight(OC, C)^T [+ bias (OC), when not null].
  virtual void linear_forward(float* out, const float* inp, const float* weight,
                              const float* bias, int rows, int in_channels,
                              int out_channels) = 0;
  /// dinp (N, C) += dout * weight (skipped when dinp is null); dweight (OC, C) += dout^T inp;
  /// dbias (OC) += column sums of dout (skipped when null).
  virtual void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, int rows,
                               int in_channels, int out_channels) = 0;
  /// out (N, C) += bias (C) on every row.
  virtual void bias_add_forward(float* out, const float* bias, int rows, int channels) = 0;
  /// dbias (C) += column sums of dout (N, C).
  virtual void bias_add_backward(float* dbias, const float* dout, int rows, int channels) = 0;
  /// out = a + b, `count` elements (out may alias a or b).
  virtual void add_forward(float* out, const float* a, const float* b, std::size_t count) = 0;
  /// da += dout; db += dout (either may be null).
  virtual void add_backward(float* da, float* db, const float* dout, std::size_t count) = 0;

  // ---- normalisation and activation ---------------------------------------------------
  /// out (N, C) = (inp - mean) * rstd * weight + bias; mean (N), rstd (N) are saved for
  /// backward. rstd = 1 / sqrt(var + 1e-5), var the biased variance.
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, int rows,
                                 int channels) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, int rows, int channels) = 0;
  /// GELU, tanh approximation (GPT-2): out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  virtual void gelu_forward(float* out, const float* inp, std::size_t count) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout,
                             std::size_t count) = 0;

  // ---- attention ----------------------------------------------------------------------
  /// Causal multi-head attention. qkv (B, T, 3*NH*HS) holds [Q | K | V], each head-major
  /// (head h at columns h*HS..h*HS+HS of its part). probs (B, NH, T, T): the softmax of
  /// Q K^T / sqrt(HS) with the future masked (zeros above the diagonal), saved for backward.
  /// out (B, T, NH*HS) = probs * V per head.
  virtual void attention_forward(float* out, float* probs, const float* qkv, int batch,
                                 int sequence, int heads, int head_size) = 0;
  virtual void attention_backward(float* dqkv, const float* dout, const float* qkv,
                                  const float* probs, int batch, int sequence, int heads,
                                  int head_size) = 0;

  // ---- embedding and loss -------------------------------------------------------------
  /// out (B, T, C) = wte[tokens[b, t]] + wpe[t]; tokens (B, T) in host memory.
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                 const float* wpe, int batch, int sequence, int channels) = 0;
  /// dwte (V, C) and dwpe (T, C) += the rows of dout (B, T, C), in token order.
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout,
                                  const int32_t* tokens, int batch, int sequence,
                                  int channels) = 0;
  /// Returns the SUM over the N rows of -log softmax(logits (N, V))[target]; targets (N) in
  /// host memory, each in [0, V).
  virtual double cross_entropy_forward(const float* logits, const int32_t* targets, int rows,
                                       int vocabulary) = 0;
  /// dlogits (N, V) += scale * (softmax(logits) - onehot(target)): the gradient of
  /// scale * the summed loss.
  virtual void cross_entropy_backward(float* dlogits, const float* logits,
                                      const int32_t* targets, int rows, int vocabulary,
                                      double scale) = 0;

  // ---- optimizer ----------------------------------------------------------------------
  /// One AdamW step (decoupled weight decay, bias-corrected moments) on `count` elements:
  /// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m^ / (sqrt(v^) + eps) + wd p),
  /// with m^ = m / (1 - b1^step), v^ = v / (1 - b2^step); step >= 1.
  virtual void adamw_update(float* param, const float* grad, float* m, float* v,
                            std::size_t count, double lr, double beta1, double beta2,
                            double eps, double weight_decay, int step) = 0;
};

}  // namespace whale::exec

// File: backend.h
// Backend: the tensor ops of GPT and Llama blocks (forward and backward) on one device's memory, with its
// memory, streams and events. The CPU backend (Eigen) is the reference; a CUDA backend
// implements the same table. Callers never branch on the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "whale/exec/backend/dropout_site.h"
#include "whale/exec/backend/dtype.h"
#include "whale/exec/backend/stream.h"
#include "whale/exec/backend/tensor.h"
#include "whale/plan/moe.h"

namespace whale::exec {

/// Conventions for every op:
/// - Tensors are views of this backend's memory, row-major, with the shape in a comment.
///   Dimensions: N rows (= B*T tokens), B samples, T sequence, C channels, NH heads, HS head
///   size, V vocabulary. A view's count must be at least the shape's element count.
/// - Dtypes (mixed precision as in llm.c and Megatron): "act" tensors (activations and their
///   gradients) and "weight" tensors used in compute are in the backend's compute_dtype();
///   GEMMs accumulate in fp32 and round their output once; layernorm statistics (mean, rstd),
///   softmax and the loss are computed in fp32; parameter gradients (dweight, dbias, dwte, dwpe)
///   are fp32 and accumulate in fp32; the optimizer's tensors are fp32. Under fp32 every float
///   tensor is fp32. Token and target tensors are i32 in backend memory (upload them once per
///   micro-batch). An op given a dtype it does not support throws std::invalid_argument.
/// - Compute ops run on Stream::compute in issue order.
/// - Every *_backward op ADDS (+=) into each gradient it writes, inputs and parameters alike;
///   callers zero a gradient tensor before its first contribution. An empty view skips that
///   gradient where the op says so.
/// - Ops are deterministic: the same inputs give bit-identical outputs, whatever the thread
///   count.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "cuda:<device>", ...
  virtual const char* name() const = 0;
  /// The dtype of weights used in compute and of activations (fp32, bf16 or fp16).
  virtual DType compute_dtype() const = 0;

  // ---- memory -------------------------------------------------------------------------
  /// `bytes` zero-filled bytes of backend memory, aligned for every dtype; never null for
  /// bytes > 0. Tensor (tensor.h) is the owning handle; prefer it.
  virtual void* allocate(std::size_t bytes) = 0;
  /// Frees memory from allocate(); null is a no-op.
  virtual void release(void* data) = 0;
  /// The most bytes held at once since construction by allocations from allocate() not yet
  /// released (as rounded up by the backend); a device backend counts its arena's peak.
  virtual std::size_t peak_memory_bytes() const = 0;
  /// device = host[0, device.bytes()), the host bytes in device.dtype. Issued on `stream`; the
  /// host memory must stay valid and unchanged until that stream is synchronized.
  virtual void upload(TensorView device, const void* host, Stream stream) = 0;
  /// host[0, device.bytes()) = device. Issued on `stream`; the host bytes are valid once that
  /// stream is synchronized.
  virtual void download(void* host, ConstTensorView device, Stream stream) = 0;
  /// dst = src; the same dtype and count.
  virtual void copy(TensorView dst, ConstTensorView src, Stream stream) = 0;
  /// dst = src converted to dst.dtype (float dtypes, the same count): exact when widening,
  /// round-to-nearest-even when narrowing (fp16 saturates to inf beyond its range).
  virtual void cast(TensorView dst, ConstTensorView src, Stream stream) = 0;
  virtual void fill_zero(TensorView data, Stream stream) = 0;

  // ---- streams and events -------------------------------------------------------------
  /// A new event, not yet recorded. Events end with the backend or by destroy_event.
  virtual Event create_event() = 0;
  virtual void destroy_event(Event event) = 0;
  /// Marks the point of `stream` after every call issued on it so far.
  virtual void record_event(Event event, Stream stream) = 0;
  /// Later calls on `stream` start after the point recorded by `event` (at once when the event
  /// was never recorded).
  virtual void wait_event(Stream stream, Event event) = 0;
  /// Blocks the caller until every call issued on `stream` has finished.
  virtual void synchronize(Stream stream) = 0;
  /// Blocks until every call issued on every stream has finished.
  virtual void synchronize() = 0;
  /// The platform's handle of `stream` (a cudaStream_t for the CUDA backend, for NCCL); null
  /// on the CPU.
  virtual void* native_stream(Stream stream) = 0;

  // ---- dense algebra ------------------------------------------------------------------
  /// c (m, n) = op(a) * op(b) [+ c when accumulate]; op(a) is (m, k): a is (m, k), or
  /// (k, m) when trans_a; op(b) is (k, n): b is (k, n), or (n, k) when trans_b. a and b share
  /// a float dtype; c is any float dtype; fp32 accumulation.
  virtual void matmul(bool trans_a, bool trans_b, int m, int n, int k, ConstTensorView a,
                      ConstTensorView b, TensorView c, bool accumulate) = 0;
  /// out (N, OC) act = inp (N, C) act * weight (OC, C)^T weight [+ bias (OC) weight, when not
  /// empty].
  virtual void linear_forward(TensorView out, ConstTensorView inp, ConstTensorView weight,
                              ConstTensorView bias, int rows, int in_channels,
                              int out_channels) = 0;
  /// dinp (N, C) act += dout * weight (skipped when empty); dweight (OC, C) fp32 += dout^T inp;
  /// dbias (OC) fp32 += column sums of dout (skipped when empty).
  virtual void linear_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                               ConstTensorView dout, ConstTensorView inp,
                               ConstTensorView weight, int rows, int in_channels,
                               int out_channels) = 0;
  /// out (N, C) act += bias (C) weight on every row.
  virtual void bias_add_forward(TensorView out, ConstTensorView bias, int rows,
                                int channels) = 0;
  /// dbias (C) fp32 += column sums of dout (N, C) act.
  virtual void bias_add_backward(TensorView dbias, ConstTensorView dout, int rows,
                                 int channels) = 0;
  /// out = a + b, `count` act elements (out may alias a or b).
  virtual void add_forward(TensorView out, ConstTensorView a, ConstTensorView b,
                           std::size_t count) = 0;
  /// da += dout; db += dout (either may be empty); act.
  virtual void add_backward(TensorView da, TensorView db, ConstTensorView dout,
                            std::size_t count) = 0;
  /// data (N, C) act *= the mask of `site`, in place: kept elements times 1 / (1 - p), dropped
  /// ones 0. Row r is the site's row first_row + r (a token's global index: sample * T +
  /// position), column c its column (kernel_math/dropout_math.h). The mask depends on nothing
  /// else, so the backward of a dropout is the same op on the gradient. No-op when inactive.
  virtual void dropout(TensorView data, const DropoutSite& site, int64_t first_row, int rows,
                       int channels) = 0;

  // ---- normalisation and activation ---------------------------------------------------
  /// out (N, C) act = (inp (N, C) act - mean) * rstd * weight (C) + bias (C); mean (N) and
  /// rstd (N) fp32 are saved for backward. rstd = 1 / sqrt(var + 1e-5), var the biased
  /// variance, all in fp32.
  virtual void layernorm_forward(TensorView out, TensorView mean, TensorView rstd,
                                 ConstTensorView inp, ConstTensorView weight,
                                 ConstTensorView bias, int rows, int channels) = 0;
  /// dinp (N, C) act, dweight (C) fp32 and dbias (C) fp32 += the gradients.
  virtual void layernorm_backward(TensorView dinp, TensorView dweight, TensorView dbias,
                                  ConstTensorView dout, ConstTensorView inp,
                                  ConstTensorView weight, ConstTensorView mean,
                                  ConstTensorView rstd, int rows, int channels) = 0;
  /// GELU, tanh approximation (GPT-2): out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  virtual void gelu_forward(TensorView out, ConstTensorView inp, std::size_t count) = 0;
  virtual void gelu_backward(TensorView dinp, ConstTensorView inp, ConstTensorView dout,
                             std::size_t count) = 0;
  /// RMSNorm: out (N, C) act = inp (N, C) act * rstd * weight (C); rstd (N) fp32 =
  /// 1 / sqrt(mean(inp^2) + 1e-5), computed in fp32 (the square root in double), saved for
  /// backward.
  virtual void rmsnorm_forward(TensorView out, TensorView rstd, ConstTensorView inp,
                               ConstTensorView weight, int rows, int channels) = 0;
  /// dinp (N, C) act and dweight (C) fp32 += the gradients.
  virtual void rmsnorm_backward(TensorView dinp, TensorView dweight, ConstTensorView dout,
                                ConstTensorView inp, ConstTensorView weight,
                                ConstTensorView rstd, int rows, int channels) = 0;
  /// SwiGLU: out = silu(gate) * up = gate * sigmoid(gate) * up, `count` act elements each.
  virtual void swiglu_forward(TensorView out, ConstTensorView gate, ConstTensorView up,
                              std::size_t count) = 0;
  /// dgate += dout * d out / d gate; dup += dout * silu(gate); act.
  virtual void swiglu_backward(TensorView dgate, TensorView dup, ConstTensorView gate,
                               ConstTensorView up, ConstTensorView dout, std::size_t count) = 0;

  // ---- attention ----------------------------------------------------------------------
  /// Causal multi-head attention with NH query heads and KV key/value heads (grouped-query
  /// attention; KV divides NH and query head h reads key/value head h / (NH / KV)).
  /// qkv (B, T, (NH + 2*KV)*HS) act holds [Q | K | V], each head-major (head h at columns
  /// h*HS..h*HS+HS of its part). probs (B, NH, T, T) act: the softmax (in fp32) of
  /// Q K^T / sqrt(HS) with the future masked (zeros above the diagonal), saved for backward.
  /// out (B, T, NH*HS) act = (probs times the dropout mask of `dropout`) * V per head; probs
  /// stay undropped (an inactive `dropout`: out = probs * V). A backend that recomputes the
  /// scores in backward (attention_recomputes_scores) saves its own state in `probs` instead,
  /// which then holds attention_saved_count elements.
  virtual void attention_forward(TensorView out, TensorView probs, ConstTensorView qkv,
                                 int batch, int sequence, int heads, int kv_heads,
                                 int head_size, const AttentionDropout& dropout) = 0;
  /// dqkv (B, T, (NH + 2*KV)*HS) act += the gradient through attention (a key/value head's
  /// gradient sums its query heads' terms in head order); `dropout` is the forward's.
  virtual void attention_backward(TensorView dqkv, ConstTensorView dout, ConstTensorView qkv,
                                  ConstTensorView probs, int batch, int sequence, int heads,
                                  int kv_heads, int head_size, const AttentionDropout& dropout) = 0;
  /// The elements of dtype `act` attention_forward's `probs` must hold: by default the
  /// (B, NH, T, T) probabilities.
  virtual std::size_t attention_saved_count(int batch, int sequence, int heads, int head_size,
                                            DType act) const {
    (void)head_size, (void)act;
    return static_cast<std::size_t>(batch) * heads * sequence * sequence;
  }
  /// True when attention_backward recomputes the scores from a saved state linear in T (no
  /// probabilities): selective recomputation then keeps `probs` rather than re-running the
  /// forward.
  virtual bool attention_recomputes_scores() const { return false; }
  /// Without dropout.
  void attention_forward(TensorView out, TensorView probs, ConstTensorView qkv, int batch,
                         int sequence, int heads, int kv_heads, int head_size) {
    attention_forward(out, probs, qkv, batch, sequence, heads, kv_heads, head_size, AttentionDropout{});
  }
  void attention_backward(TensorView dqkv, ConstTensorView dout, ConstTensorView qkv,
                          ConstTensorView probs, int batch, int sequence, int heads, int kv_heads,
                          int head_size) {
    attention_backward(dqkv, dout, qkv, probs, batch, sequence, heads, kv_heads, head_size,
                       AttentionDropout{});
  }
  /// Multi-head attention without dropout: KV = NH, qkv (B, T, 3*NH*HS).
  void attention_forward(TensorView out, TensorView probs, ConstTensorView qkv, int batch,
                         int sequence, int heads, int head_size) {
    attention_forward(out, probs, qkv, batch, sequence, heads, heads, head_size);
  }
  void attention_backward(TensorView dqkv, ConstTensorView dout, ConstTensorView qkv,
                          ConstTensorView probs, int batch, int sequence, int heads,
                          int head_size) {
    attention_backward(dqkv, dout, qkv, probs, batch, sequence, heads, heads, head_size);
  }
  /// Rotary position embedding (Llama's "rotate_half"), IN PLACE on data (B, T, W) act: in
  /// each row the first `heads` heads of HS columns (HS even) rotate, pair (i, i + HS/2) by the
  /// angle t * theta^(-2i/HS) at position t; the other columns stay. The angle's cos and sin
  /// are computed in double and rounded to fp32; the rotation is in fp32.
  virtual void rope_forward(TensorView data, int batch, int sequence, int row_channels,
                            int heads, int head_size, double theta) = 0;
  /// The gradient through rope_forward, IN PLACE (not +=): grad (B, T, W) act's rotated
  /// columns turn by the inverse rotation; the other columns stay.
  virtual void rope_backward(TensorView grad, int batch, int sequence, int row_channels,
                             int heads, int head_size, double theta) = 0;

  // ---- embedding and loss -------------------------------------------------------------
  /// out (B, T, C) act = wte[tokens[b, t]] + wpe[t]; tokens (B, T) i32; wte (V, C), wpe (T, C)
  /// weight. A negative token adds no row (its row is another tensor rank's, under a
  /// vocabulary-parallel table): out = wpe[t] there. Likewise the backward adds nothing to dwte
  /// for it. An empty wpe is a model without learned positions (Llama): out = wte[tokens[b, t]]
  /// (zero for another rank's row), and the backward takes an empty dwpe.
  virtual void embedding_forward(TensorView out, ConstTensorView tokens, ConstTensorView wte,
                                 ConstTensorView wpe, int batch, int sequence,
                                 int channels) = 0;
  /// dwte (V, C) and dwpe (T, C) fp32 += the rows of dout (B, T, C) act, in token order; an
  /// empty dwpe gets nothing (no position table).
  virtual void embedding_backward(TensorView dwte, TensorView dwpe, ConstTensorView dout,
                                  ConstTensorView tokens, int batch, int sequence,
                                  int channels) = 0;
  /// Returns the SUM over the N rows of -log softmax(logits (N, V) act)[target], in fp32 or
  /// wider; targets (N) i32, each in [0, V). Synchronizes the compute stream.
  virtual double cross_entropy_forward(ConstTensorView logits, ConstTensorView targets,
                                       int rows, int vocabulary) = 0;
  /// dlogits (N, V) act += scale * (softmax(logits) - onehot(target)): the gradient of
  /// scale * the summed loss.
  virtual void cross_entropy_backward(TensorView dlogits, ConstTensorView logits,
                                      ConstTensorView targets, int rows, int vocabulary,
                                      double scale) = 0;
  /// logits (N, V) act = scale * (softmax(logits) - onehot(target)): the gradient written over
  /// the logits (their values are gone after), so the LM head holds one (N, V) tensor, not two.
  /// Equal to cross_entropy_backward into a zero tensor; this default does exactly that
  /// through a temporary, a backend whose kernel reads each row before writing it overrides it.
  virtual void cross_entropy_backward_in_place(TensorView logits, ConstTensorView targets,
                                               int rows, int vocabulary, double scale) {
    Tensor dlogits(*this, logits.count, logits.dtype);  // zero-filled
    cross_entropy_backward(dlogits.view(), logits, targets, rows, vocabulary, scale);
    copy(logits, dlogits.view(), Stream::compute);
  }

  /// Vocabulary-parallel cross-entropy (Megatron-LM): logits (N, columns) act are this tensor
  /// rank's slice of the vocabulary, targets (N) i32 the rows' targets as columns of it, negative
  /// where another rank holds the target. statistics (N, 4) fp32 = per row: the slice's max
  /// logit, the sum over the slice of exp(logit - max) as a float and its remainder (their sum
  /// in double is the sum), and the target's logit (0 for a negative target). The host combines
  /// every rank's (vocabulary_parallel.h).
  virtual void cross_entropy_shard_statistics(ConstTensorView logits, ConstTensorView targets,
                                              int rows, int columns, TensorView statistics) = 0;
  /// logits (N, columns) act = scale * (exp(logit - lse) - onehot(target)), in place: the
  /// gradient of scale * the summed loss over this slice. log_sum_exp (N, 2) fp32: each row's
  /// log-sum-exp over the whole vocabulary as a float and its remainder; a negative target has
  /// no one-hot term here.
  virtual void cross_entropy_shard_backward_in_place(TensorView logits, ConstTensorView targets,
                                                     ConstTensorView log_sum_exp, int rows,
                                                     int columns, double scale) = 0;

  // ---- mixture of experts -------------------------------------------------------------
  /// E experts, K chosen per token, M routed rows (token copies grouped by expert). The
  /// routing plan (which routed row serves which slot) is host data uploaded as i32:
  /// source_rows (M) is the token of each routed row; slot_rows (N, K) is the routed row of
  /// each token's j-th choice, or -1 where capacity dropped it.
  /// The router of logits (N, E) act (kernel_math/moe_math.h); chosen (N, K) i32 largest
  /// first, ties to the lower index.
  /// softmax_topk: probs (N, E) fp32 = softmax over all experts; chosen = the K largest logits'
  /// experts; gates (N, K) fp32 = the softmax over the chosen logits; `bias` unused.
  /// sigmoid_bias: probs = the scores sigmoid(logits); chosen = the K largest score + bias
  /// (bias (E) fp32); gates = the chosen scores over their sum.
  virtual void moe_router_forward(plan::MoeRouter router, TensorView probs, TensorView chosen,
                                  TensorView gates, ConstTensorView logits, ConstTensorView bias,
                                  int rows, int experts, int top_k) = 0;
  /// dlogits (N, E) act += the gradient through the gates of dgates (N, K) fp32 plus that
  /// through the auxiliary loss's probabilities of aux_dprobs (E) fp32, d loss / d P[n, e] (the
  /// same for every row n): softmax_topk's P = probs, sigmoid_bias's P = scores / their sum.
  virtual void moe_router_backward(plan::MoeRouter router, TensorView dlogits,
                                   ConstTensorView probs, ConstTensorView chosen,
                                   ConstTensorView gates, ConstTensorView dgates,
                                   ConstTensorView aux_dprobs, int rows, int experts,
                                   int top_k) = 0;
  /// out (M, C) act = inp (N, C) act's row source_rows[m], for each routed row m (dispatch).
  virtual void moe_dispatch_forward(TensorView out, ConstTensorView inp,
                                    ConstTensorView source_rows, int routed_rows,
                                    int channels) = 0;
  /// dinp (N, C) act += for each token n the sum over its slots j (in slot order) of dout
  /// (M, C) act's row slot_rows[n, j]; dropped slots add nothing.
  virtual void moe_dispatch_backward(TensorView dinp, ConstTensorView dout,
                                     ConstTensorView slot_rows, int rows, int top_k,
                                     int channels) = 0;
  /// out (N, C) act += for each token n the sum over its kept slots j of gates[n, j] (fp32)
  /// * expert_out (M, C) act's row slot_rows[n, j] (combine).
  virtual void moe_combine_forward(TensorView out, ConstTensorView expert_out,
                                   ConstTensorView gates, ConstTensorView slot_rows, int rows,
                                   int top_k, int channels) = 0;
  /// For each kept slot (n, j) with routed row m = slot_rows[n, j]: dexpert_out (M, C) act row
  /// m += gates[n, j] * dout (N, C) act row n; dgates (N, K) fp32 [n, j] += dot(dout row n,
  /// expert_out row m). Dropped slots leave both alone.
  virtual void moe_combine_backward(TensorView dexpert_out, TensorView dgates,
                                    ConstTensorView dout, ConstTensorView expert_out,
                                    ConstTensorView gates, ConstTensorView slot_rows, int rows,
                                    int top_k, int channels) = 0;

  // ---- optimizer and mixed precision --------------------------------------------------
  /// One AdamW step (decoupled weight decay, bias-corrected moments) on `count` fp32 elements:
  /// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m^ / (sqrt(v^) + eps) + wd p),
  /// with m^ = m / (1 - b1^step), v^ = v / (1 - b2^step); step >= 1.
  virtual void adamw_update(TensorView param, ConstTensorView grad, TensorView m, TensorView v,
                            std::size_t count, double lr, double beta1, double beta2,
                            double eps, double weight_decay, int step) = 0;
  /// One tensor of adamw_update_batch: param, grad, m, v fp32 of the same count; weight decay
  /// applies where `decayed`.
  struct AdamwSegment {
    TensorView param;
    ConstTensorView grad;
    TensorView m;
    TensorView v;
    bool decayed = true;
  };
  /// adamw_update on every segment with the same scalars (weight_decay 0 where a segment is not
  /// `decayed`): the whole optimizer step of a rank.
  /// Results are those of the per-segment loop (this default); a backend may run them in one
  /// launch, caching its tables while the segments' addresses and counts stay the same.
  virtual void adamw_update_batch(const std::vector<AdamwSegment>& segments, double lr,
                                  double beta1, double beta2, double eps, double weight_decay,
                                  int step) {
    for (const AdamwSegment& s : segments)
      adamw_update(s.param, s.grad, s.m, s.v, s.param.count, lr, beta1, beta2, eps, s.decayed ? weight_decay : 0.0,
                   step);
  }
  /// One step of SGD with momentum as PyTorch's torch.optim.SGD takes it (dampening 0, no
  /// Nesterov) on `count` fp32 elements: d = g + wd p; buf = momentum buf + d; p -= lr buf. A
  /// buffer that starts at zero makes the first step's buffer d, as PyTorch's first step does.
  virtual void sgd_update(TensorView param, ConstTensorView grad, TensorView momentum_buffer,
                          std::size_t count, double lr, double momentum, double weight_decay) = 0;
  /// One tensor of sgd_update_batch: param, grad, momentum_buffer fp32 of the same count;
  /// weight decay applies where `decayed`.
  struct SgdSegment {
    TensorView param;
    ConstTensorView grad;
    TensorView momentum_buffer;
    bool decayed = true;
  };
  /// sgd_update on every segment with the same scalars, as adamw_update_batch is to adamw_update.
  virtual void sgd_update_batch(const std::vector<SgdSegment>& segments, double lr, double momentum,
                                double weight_decay) {
    for (const SgdSegment& s : segments)
      sgd_update(s.param, s.grad, s.momentum_buffer, s.param.count, lr, momentum, s.decayed ? weight_decay : 0.0);
  }
  /// data *= factor, element-wise (float dtypes): unscales loss-scaled gradients.
  virtual void scale(TensorView data, double factor) = 0;
  /// The sum of the squares of every element of `tensors` (fp32), accumulated in double in an
  /// order fixed by the tensors' counts alone (not by threads or timing): the gradient norm of
  /// clipping. Synchronizes the compute stream.
  virtual double sum_of_squares(const std::vector<ConstTensorView>& tensors) = 0;
  /// True when any element of `data` is inf or NaN (loss scaling's overflow check).
  /// Synchronizes the compute stream.
  virtual bool has_non_finite(ConstTensorView data) = 0;
};

}  // namespace whale::exec

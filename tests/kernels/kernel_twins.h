// File: kernel_twins.h
// Host twins of the CUDA kernels: the same element functions (backend/kernel_math) composed in
// the same order as the kernels compose them (warp lanes and butterflies, blocks of 256, tiles
// of the attention kernel), so the host tests check the kernels' arithmetic without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kernel_math/dropout_math.h"

namespace whale::exec::test {

void twin_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int rows, int channels);
void twin_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int rows, int channels);
void twin_gelu_forward(float* out, const float* inp, std::size_t count);
void twin_gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t count);
void twin_bias_add_forward(float* out, const float* bias, int rows, int channels);
void twin_bias_add_backward(float* dbias, const float* dout, int rows, int channels);
void twin_embedding_forward(float* out, const int32_t* tokens, const float* wte,
                            const float* wpe, int batch, int sequence, int channels);
void twin_embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                             int batch, int sequence, int channels, int vocabulary);
/// The fused softmax + cross-entropy kernel: each row's loss into losses (N); when dlogits is
/// not null, dlogits += scale * (softmax - onehot).
void twin_cross_entropy(float* losses, float* dlogits, const float* logits,
                        const int32_t* targets, int rows, int vocabulary, float scale);
/// The vocabulary-slice kernels (cross_entropy_shard_statistics and _backward): statistics
/// (N, 4) = max, sum, 0, target logit or 0; the backward writes over the logits.
void twin_cross_entropy_shard_statistics(float* statistics, const float* logits,
                                         const int32_t* targets, int rows, int columns);
void twin_cross_entropy_shard_backward(float* logits, const int32_t* targets,
                                       const float* log_sum_exp, int rows, int columns, float scale);
/// Flash attention forward: out (B, T, NH*HS) and the rows' log-sum-exp lse (B, NH, T); qkv
/// (B, T, (NH + 2 KV) HS); under `drop`, the probabilities meet V through its mask.
void twin_attention_forward(float* out, float* lse, const float* qkv, int batch, int sequence,
                            int heads, int kv_heads, int head_size,
                            const whale::exec::kmath::AttentionDropoutScalars& drop = {});
/// Flash attention backward: dqkv += the gradients, from out and lse of forward (and its drop).
void twin_attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                             const float* lse, int batch, int sequence, int heads, int kv_heads,
                             int head_size,
                             const whale::exec::kmath::AttentionDropoutScalars& drop = {});
/// Dropout of data (rows, channels) in place, rows first_row.. of `mask` (the CUDA kernel).
void twin_dropout(float* data, const whale::exec::kmath::DropoutScalars& mask, uint64_t first_row,
                  int rows, int channels);
void twin_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                          int rows, int channels);
void twin_rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                           const float* weight, const float* rstd, int rows, int channels);
void twin_swiglu_forward(float* out, const float* gate, const float* up, std::size_t count);
void twin_swiglu_backward(float* dgate, float* dup, const float* gate, const float* up,
                          const float* dout, std::size_t count);
/// The RoPE kernel in place (inverse: the gradient's rotation back).
void twin_rope(float* data, int batch, int sequence, int row_channels, int heads, int head_size,
               double theta, bool inverse);
/// The multi-tensor AdamW kernel over tensors of `counts` elements (params[i], grads[i], ...).
void twin_adamw(const std::vector<float*>& params, const std::vector<const float*>& grads,
                const std::vector<float*>& m, const std::vector<float*>& v,
                const std::vector<std::size_t>& counts, double lr, double beta1, double beta2,
                double eps, double weight_decay, int step);
/// The sum-of-squares kernel over `tensors` of `counts` elements: its chunks' partials, summed
/// in chunk order as the backend sums them.
double twin_sum_of_squares(const std::vector<const float*>& tensors, const std::vector<std::size_t>& counts);
/// The multi-tensor SGD kernel over tensors of `counts` elements.
void twin_sgd(const std::vector<float*>& params, const std::vector<const float*>& grads,
              const std::vector<float*>& momentum_buffers, const std::vector<std::size_t>& counts,
              double lr, double momentum, double weight_decay);

}  // namespace whale::exec::test

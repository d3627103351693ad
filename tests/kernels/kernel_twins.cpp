// File: kernel_twins.cpp
// Host twins of the CUDA kernels (see kernel_twins.h). Each mirrors its kernel's loop structure:
// `lane` loops stand for a warp's threads, `thread` loops for a block's.
#include "kernel_twins.h"

#include <cmath>

#include "backend/gpu_host/adamw_chunks.h"
#include "backend/gpu_host/token_buckets.h"
#include "backend/kernel_math/adamw_math.h"
#include "backend/kernel_math/attention_math.h"
#include "backend/kernel_math/elementwise_math.h"
#include "backend/kernel_math/launch_geometry.h"
#include "backend/kernel_math/norm_math.h"
#include "backend/kernel_math/online_softmax.h"

namespace whale::exec::test {
namespace {
using namespace whale::exec::kmath;

/// A warp's sum of term over a row of n: lane shares, then the butterfly.
template <class Term>
float warp_row_sum(int n, Term term) {
  float lanes[kWarpSize];
  for (int lane = 0; lane < kWarpSize; ++lane) lanes[lane] = lane_strided_sum(n, lane, kWarpSize, term);
  return butterfly_reduce_host(lanes, [](float a, float b) { return a + b; });
}
}  // namespace

void twin_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int rows, int channels) {
  for (int r = 0; r < rows; ++r) {
    const float* x = inp + static_cast<std::size_t>(r) * channels;
    const float mu = warp_row_sum(channels, [&](int c) { return x[c]; }) / static_cast<float>(channels);
    const float var = warp_row_sum(channels, [&](int c) { return (x[c] - mu) * (x[c] - mu); }) /
                      static_cast<float>(channels);
    const float s = layernorm_rstd(var);
    for (int c = 0; c < channels; ++c)
      out[static_cast<std::size_t>(r) * channels + c] = layernorm_out(x[c], mu, s, weight[c], bias[c]);
    mean[r] = mu;
    rstd[r] = s;
  }
}

void twin_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int rows, int channels) {
  const auto at = [channels](int r, int c) { return static_cast<std::size_t>(r) * channels + c; };
  for (int r = 0; r < rows; ++r) {
    const float dnorm_mean =
        warp_row_sum(channels, [&](int c) { return dout[at(r, c)] * weight[c]; }) /
        static_cast<float>(channels);
    const float dnorm_norm_mean = warp_row_sum(channels, [&](int c) {
                                    return dout[at(r, c)] * weight[c] *
                                           layernorm_norm(inp[at(r, c)], mean[r], rstd[r]);
                                  }) /
                                  static_cast<float>(channels);
    for (int c = 0; c < channels; ++c)
      dinp[at(r, c)] += layernorm_dinp(dout[at(r, c)] * weight[c],
                                       layernorm_norm(inp[at(r, c)], mean[r], rstd[r]),
                                       dnorm_mean, dnorm_norm_mean, rstd[r]);
  }
  for (int c = 0; c < channels; ++c) {
    dweight[c] += ordered_row_sum(rows, [&](int r) {
      return static_cast<double>(layernorm_norm(inp[at(r, c)], mean[r], rstd[r]) * dout[at(r, c)]);
    });
    dbias[c] += ordered_row_sum(rows, [&](int r) { return static_cast<double>(dout[at(r, c)]); });
  }
}

void twin_gelu_forward(float* out, const float* inp, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = gelu_forward(inp[i]);
}

void twin_gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dinp[i] += gelu_derivative(inp[i]) * dout[i];
}

void twin_bias_add_forward(float* out, const float* bias, int rows, int channels) {
  const std::size_t count = static_cast<std::size_t>(rows) * channels;
  for (std::size_t i = 0; i < count; ++i) out[i] = residual_add(out[i], bias[channel_of(i, channels)]);
}

void twin_bias_add_backward(float* dbias, const float* dout, int rows, int channels) {
  for (int c = 0; c < channels; ++c)
    dbias[c] += ordered_row_sum(rows, [&](int r) {
      return static_cast<double>(dout[static_cast<std::size_t>(r) * channels + c]);
    });
}

void twin_embedding_forward(float* out, const int32_t* tokens, const float* wte,
                            const float* wpe, int batch, int sequence, int channels) {
  const std::size_t rows = static_cast<std::size_t>(batch) * sequence;
  for (std::size_t n = 0; n < rows; ++n)
    for (int c = 0; c < channels; ++c)
      out[n * channels + c] = embedding_element(wte, wpe, tokens[n], n, c, sequence, channels);
}

void twin_embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                             int batch, int sequence, int channels, int vocabulary) {
  const gpu::TokenBuckets buckets = gpu::token_buckets(tokens, batch * sequence, vocabulary);
  for (std::size_t i = 0; i < buckets.tokens.size(); ++i)  // one block per distinct token
    for (int c = 0; c < channels; ++c) {                     // one thread per channel
      float* sum = dwte + static_cast<std::size_t>(buckets.tokens[i]) * channels + c;
      for (int p = buckets.offsets[i]; p < buckets.offsets[i + 1]; ++p)
        *sum += dout[static_cast<std::size_t>(buckets.positions[p]) * channels + c];
    }
  for (int t = 0; t < sequence; ++t)  // one thread per (t, c)
    for (int c = 0; c < channels; ++c)
      for (int b = 0; b < batch; ++b)
        dwpe[static_cast<std::size_t>(t) * channels + c] +=
            dout[(static_cast<std::size_t>(b) * sequence + t) * channels + c];
}

void twin_cross_entropy(float* losses, float* dlogits, const float* logits,
                        const int32_t* targets, int rows, int vocabulary, float scale) {
  constexpr int kWarps = kBlockThreads / kWarpSize;
  for (int r = 0; r < rows; ++r) {
    const float* x = logits + static_cast<std::size_t>(r) * vocabulary;
    OnlineSoftmax warp_states[kWarps];
    for (int w = 0; w < kWarps; ++w) {
      OnlineSoftmax lanes[kWarpSize];
      for (int lane = 0; lane < kWarpSize; ++lane)
        for (int v = w * kWarpSize + lane; v < vocabulary; v += kBlockThreads)
          lanes[lane] = online_softmax_update(lanes[lane], x[v]);
      warp_states[w] = butterfly_reduce_host(lanes, online_softmax_merge);
    }
    OnlineSoftmax total = warp_states[0];
    for (int w = 1; w < kWarps; ++w) total = online_softmax_merge(total, warp_states[w]);
    const float lse = online_softmax_logsumexp(total);
    losses[r] = lse - x[targets[r]];
    if (dlogits)
      for (int v = 0; v < vocabulary; ++v)
        dlogits[static_cast<std::size_t>(r) * vocabulary + v] +=
            cross_entropy_grad(x[v], lse, v == targets[r], scale);
  }
}

void twin_attention_forward(float* out, float* lse, const float* qkv, int batch, int sequence,
                            int heads, int head_size) {
  const int C = heads * head_size, stride = 3 * C;
  const float scale = 1.0f / sqrtf(static_cast<float>(head_size));
  FlashRow row;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < sequence; ++i) {
        const float* base = qkv + static_cast<std::size_t>(b) * sequence * stride + h * head_size;
        flash_row_init(row, head_size);
        for (int kt = 0; kt * kAttentionTile <= i; ++kt) {
          const TileRows keys = tile_rows(kt, sequence);
          const int visible = causal_keys_in_tile(i, keys.first, keys.count);
          flash_forward_tile(row, base + static_cast<std::size_t>(i) * stride,
                             base + C + static_cast<std::size_t>(keys.first) * stride,
                             base + 2 * C + static_cast<std::size_t>(keys.first) * stride, stride,
                             visible, head_size, scale);
        }
        float* o = out + (static_cast<std::size_t>(b) * sequence + i) * C + h * head_size;
        for (int d = 0; d < head_size; ++d) o[d] = flash_output(row, d);
        lse[(static_cast<std::size_t>(b) * heads + h) * sequence + i] = flash_logsumexp(row);
      }
}

void twin_attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                             const float* lse, int batch, int sequence, int heads,
                             int head_size) {
  const int C = heads * head_size, stride = 3 * C;
  const float scale = 1.0f / sqrtf(static_cast<float>(head_size));
  std::vector<float> delta(static_cast<std::size_t>(sequence));
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const std::size_t qkv_base = static_cast<std::size_t>(b) * sequence * stride + h * head_size;
      const std::size_t out_base = static_cast<std::size_t>(b) * sequence * C + h * head_size;
      const float* q = qkv + qkv_base;
      const float* o = out + out_base;
      const float* dO = dout + out_base;
      const float* row_lse = lse + (static_cast<std::size_t>(b) * heads + h) * sequence;
      for (int i = 0; i < sequence; ++i)
        delta[i] = dot(dO + static_cast<std::size_t>(i) * C, o + static_cast<std::size_t>(i) * C, head_size);
      // dq: one thread per query, key tiles in order.
      for (int i = 0; i < sequence; ++i) {
        float dq[kMaxHeadSize] = {};
        for (int kt = 0; kt * kAttentionTile <= i; ++kt) {
          const TileRows keys = tile_rows(kt, sequence);
          flash_backward_dq_tile(dq, q + static_cast<std::size_t>(i) * stride,
                                 dO + static_cast<std::size_t>(i) * C, row_lse[i], delta[i],
                                 q + C + static_cast<std::size_t>(keys.first) * stride,
                                 q + 2 * C + static_cast<std::size_t>(keys.first) * stride, stride,
                                 causal_keys_in_tile(i, keys.first, keys.count), head_size, scale);
        }
        for (int d = 0; d < head_size; ++d) dqkv[qkv_base + static_cast<std::size_t>(i) * stride + d] += dq[d];
      }
      // dk, dv: one thread per key, query tiles in order; q and dout rows have different
      // strides here, so the twin gathers each tile like the kernel's shared-memory copy.
      const int tiles = (sequence + kAttentionTile - 1) / kAttentionTile;
      std::vector<float> q_tile(static_cast<std::size_t>(kAttentionTile) * head_size);
      std::vector<float> do_tile(q_tile.size());
      for (int j = 0; j < sequence; ++j) {
        float dk[kMaxHeadSize] = {}, dv[kMaxHeadSize] = {};
        for (int qt = j / kAttentionTile; qt < tiles; ++qt) {
          const TileRows queries = tile_rows(qt, sequence);
          for (int r = 0; r < queries.count; ++r)
            for (int d = 0; d < head_size; ++d) {
              q_tile[static_cast<std::size_t>(r) * head_size + d] = q[static_cast<std::size_t>(queries.first + r) * stride + d];
              do_tile[static_cast<std::size_t>(r) * head_size + d] = dO[static_cast<std::size_t>(queries.first + r) * C + d];
            }
          const TileRows seen = causal_queries_in_tile(j, queries.first, queries.count);
          const std::size_t skip = static_cast<std::size_t>(seen.first - queries.first) * head_size;
          flash_backward_dkv_tile(dk, dv, q + C + static_cast<std::size_t>(j) * stride,
                                  q + 2 * C + static_cast<std::size_t>(j) * stride,
                                  q_tile.data() + skip, do_tile.data() + skip, row_lse + seen.first,
                                  delta.data() + seen.first, head_size, seen.count, head_size,
                                  scale);
        }
        for (int d = 0; d < head_size; ++d) {
          dqkv[qkv_base + C + static_cast<std::size_t>(j) * stride + d] += dk[d];
          dqkv[qkv_base + 2 * C + static_cast<std::size_t>(j) * stride + d] += dv[d];
        }
      }
    }
}

void twin_adamw(const std::vector<float*>& params, const std::vector<const float*>& grads,
                const std::vector<float*>& m, const std::vector<float*>& v,
                const std::vector<std::size_t>& counts, double lr, double beta1, double beta2,
                double eps, double weight_decay, int step) {
  const AdamwScalars s = adamw_scalars(lr, beta1, beta2, eps, weight_decay, step);
  for (const gpu::AdamwChunk& chunk : gpu::adamw_chunks(counts))  // one block per chunk
    for (std::uint32_t i = 0; i < chunk.count; ++i) {
      const std::size_t e = chunk.offset + i;
      adamw_element(params[chunk.tensor][e], grads[chunk.tensor][e], m[chunk.tensor][e],
                    v[chunk.tensor][e], s);
    }
}

}  // namespace whale::exec::test

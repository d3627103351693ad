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
#include "backend/kernel_math/rope_math.h"
#include "backend/kernel_math/sgd_math.h"

namespace whale::exec::test {
namespace {
using namespace whale::exec::kmath;

/// A warp's sum of term over a row of n as the norm kernels make it on fp32 rows of 16-byte
/// aligned pointers: lane shares of norm_chunk_width columns at a time, then the butterfly.
template <class Term>
float warp_row_sum(int n, Term term) {
  const int width = norm_chunk_width(n, static_cast<int>(sizeof(float)), true);
  float lanes[kWarpSize];
  for (int lane = 0; lane < kWarpSize; ++lane) lanes[lane] = lane_chunked_sum(n, lane, kWarpSize, width, term);
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
  if (dwpe == nullptr) return;       // no position table
  for (int t = 0; t < sequence; ++t)  // one thread per (t, c)
    for (int c = 0; c < channels; ++c)
      for (int b = 0; b < batch; ++b)
        dwpe[static_cast<std::size_t>(t) * channels + c] +=
            dout[(static_cast<std::size_t>(b) * sequence + t) * channels + c];
}

namespace {
/// One block's online softmax state of a row of `columns` values: lanes stride the row, each
/// warp merges its lanes by butterfly, then the warps in order (the kernels' order).
OnlineSoftmax block_softmax_state(const float* x, int columns) {
  constexpr int kWarps = kBlockThreads / kWarpSize;
  OnlineSoftmax warp_states[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    OnlineSoftmax lanes[kWarpSize];
    for (int lane = 0; lane < kWarpSize; ++lane)
      for (int v = w * kWarpSize + lane; v < columns; v += kBlockThreads)
        lanes[lane] = online_softmax_update(lanes[lane], x[v]);
    warp_states[w] = butterfly_reduce_host(lanes, online_softmax_merge);
  }
  OnlineSoftmax total = warp_states[0];
  for (int w = 1; w < kWarps; ++w) total = online_softmax_merge(total, warp_states[w]);
  return total;
}
}  // namespace

void twin_cross_entropy_shard_statistics(float* statistics, const float* logits,
                                         const int32_t* targets, int rows, int columns) {
  for (int r = 0; r < rows; ++r) {
    const float* x = logits + static_cast<std::size_t>(r) * columns;
    const OnlineSoftmax total = block_softmax_state(x, columns);
    float* out = statistics + static_cast<std::size_t>(r) * 4;
    out[0] = total.max;
    out[1] = total.sum;
    out[2] = 0.0f;
    out[3] = target_in_vocabulary(targets[r], columns) ? x[targets[r]] : 0.0f;
  }
}

void twin_cross_entropy_shard_backward(float* logits, const int32_t* targets,
                                       const float* log_sum_exp, int rows, int columns, float scale) {
  for (int r = 0; r < rows; ++r) {
    float* x = logits + static_cast<std::size_t>(r) * columns;
    const float lse = log_sum_exp[2 * r] + log_sum_exp[2 * r + 1];
    for (int v = 0; v < columns; ++v) x[v] = cross_entropy_grad(x[v], lse, v == targets[r], scale);
  }
}

void twin_cross_entropy(float* losses, float* dlogits, const float* logits,
                        const int32_t* targets, int rows, int vocabulary, float scale) {
  for (int r = 0; r < rows; ++r) {
    const float* x = logits + static_cast<std::size_t>(r) * vocabulary;
    const float lse = online_softmax_logsumexp(block_softmax_state(x, vocabulary));
    losses[r] = target_in_vocabulary(targets[r], vocabulary) ? lse - x[targets[r]] : NAN;
    if (dlogits)
      for (int v = 0; v < vocabulary; ++v)
        dlogits[static_cast<std::size_t>(r) * vocabulary + v] +=
            cross_entropy_grad(x[v], lse, v == targets[r], scale);
  }
}

namespace {
/// The columns of query head h of sample b (the kernels' HeadView).
struct TwinHead {
  std::size_t q, k, v, out, stats;
  int stride, out_stride;
};
TwinHead twin_head(int b, int h, int sequence, int heads, int kv_heads, int head_size) {
  const int C = heads * head_size, KC = kv_heads * head_size, stride = C + 2 * KC;
  const std::size_t base = static_cast<std::size_t>(b) * sequence * stride;
  const std::size_t kv_col = static_cast<std::size_t>(kv_head_of(h, heads, kv_heads)) * head_size;
  return {base + static_cast<std::size_t>(h) * head_size, base + C + kv_col, base + C + KC + kv_col,
          static_cast<std::size_t>(b) * sequence * C + static_cast<std::size_t>(h) * head_size,
          (static_cast<std::size_t>(b) * heads + h) * sequence, stride, C};
}
}  // namespace

void twin_attention_forward(float* out, float* lse, const float* qkv, int batch, int sequence,
                            int heads, int kv_heads, int head_size,
                            const AttentionDropoutScalars& drop) {
  const float scale = 1.0f / sqrtf(static_cast<float>(head_size));
  FlashRow row;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const TwinHead hv = twin_head(b, h, sequence, heads, kv_heads, head_size);
      const uint64_t head_row = attention_head_row(drop, b, h, sequence);
      for (int i = 0; i < sequence; ++i) {
        flash_row_init(row, head_size);
        for (int kt = 0; kt * kAttentionTile <= i; ++kt) {
          const TileRows keys = tile_rows(kt, sequence);
          const std::size_t first = static_cast<std::size_t>(keys.first) * hv.stride;
          flash_forward_tile(row, qkv + hv.q + static_cast<std::size_t>(i) * hv.stride,
                             qkv + hv.k + first, qkv + hv.v + first, hv.stride,
                             causal_keys_in_tile(i, keys.first, keys.count), head_size, scale,
                             drop.mask, head_row + static_cast<uint64_t>(i), keys.first);
        }
        float* o = out + hv.out + static_cast<std::size_t>(i) * hv.out_stride;
        for (int d = 0; d < head_size; ++d) o[d] = flash_output(row, d);
        lse[hv.stats + i] = flash_logsumexp(row);
      }
    }
}

void twin_attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                             const float* lse, int batch, int sequence, int heads, int kv_heads,
                             int head_size, const AttentionDropoutScalars& drop) {
  const float scale = 1.0f / sqrtf(static_cast<float>(head_size));
  std::vector<float> delta(static_cast<std::size_t>(batch) * heads * sequence);
  // delta and dq: one thread per (query head, query), key tiles in order.
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      const TwinHead hv = twin_head(b, h, sequence, heads, kv_heads, head_size);
      for (int i = 0; i < sequence; ++i) {
        const std::size_t at = hv.out + static_cast<std::size_t>(i) * hv.out_stride;
        delta[hv.stats + i] = dot(dout + at, out + at, head_size);
      }
      const uint64_t head_row = attention_head_row(drop, b, h, sequence);
      for (int i = 0; i < sequence; ++i) {
        float dq[kMaxHeadSize] = {};
        for (int kt = 0; kt * kAttentionTile <= i; ++kt) {
          const TileRows keys = tile_rows(kt, sequence);
          const std::size_t first = static_cast<std::size_t>(keys.first) * hv.stride;
          flash_backward_dq_tile(dq, qkv + hv.q + static_cast<std::size_t>(i) * hv.stride,
                                 dout + hv.out + static_cast<std::size_t>(i) * hv.out_stride,
                                 lse[hv.stats + i], delta[hv.stats + i], qkv + hv.k + first,
                                 qkv + hv.v + first, hv.stride,
                                 causal_keys_in_tile(i, keys.first, keys.count), head_size, scale,
                                 drop.mask, head_row + static_cast<uint64_t>(i), keys.first);
        }
        for (int d = 0; d < head_size; ++d) dqkv[hv.q + static_cast<std::size_t>(i) * hv.stride + d] += dq[d];
      }
    }
  // dk, dv: one thread per (key/value head, key), its query heads in order, query tiles in
  // order; each tile gathered like the kernel's shared-memory copy.
  const int tiles = (sequence + kAttentionTile - 1) / kAttentionTile, group = heads / kv_heads;
  std::vector<float> q_tile(static_cast<std::size_t>(kAttentionTile) * head_size);
  std::vector<float> do_tile(q_tile.size());
  for (int b = 0; b < batch; ++b)
    for (int kv = 0; kv < kv_heads; ++kv) {
      const TwinHead kv_view = twin_head(b, kv * group, sequence, heads, kv_heads, head_size);
      for (int j = 0; j < sequence; ++j) {
        float dk[kMaxHeadSize] = {}, dv[kMaxHeadSize] = {};
        const std::size_t key_row = static_cast<std::size_t>(j) * kv_view.stride;
        for (int h = kv * group; h < (kv + 1) * group; ++h) {
          const TwinHead hv = twin_head(b, h, sequence, heads, kv_heads, head_size);
          for (int qt = j / kAttentionTile; qt < tiles; ++qt) {
            const TileRows queries = tile_rows(qt, sequence);
            for (int r = 0; r < queries.count; ++r)
              for (int d = 0; d < head_size; ++d) {
                const std::size_t row = static_cast<std::size_t>(queries.first + r);
                q_tile[static_cast<std::size_t>(r) * head_size + d] = qkv[hv.q + row * hv.stride + d];
                do_tile[static_cast<std::size_t>(r) * head_size + d] = dout[hv.out + row * hv.out_stride + d];
              }
            const TileRows seen = causal_queries_in_tile(j, queries.first, queries.count);
            const std::size_t skip = static_cast<std::size_t>(seen.first - queries.first) * head_size;
            flash_backward_dkv_tile(dk, dv, qkv + kv_view.k + key_row, qkv + kv_view.v + key_row,
                                    q_tile.data() + skip, do_tile.data() + skip,
                                    lse + hv.stats + seen.first, delta.data() + hv.stats + seen.first,
                                    head_size, seen.count, head_size, scale, drop.mask,
                                    attention_head_row(drop, b, h, sequence) +
                                        static_cast<uint64_t>(seen.first),
                                    j);
          }
        }
        for (int d = 0; d < head_size; ++d) {
          dqkv[kv_view.k + key_row + d] += dk[d];
          dqkv[kv_view.v + key_row + d] += dv[d];
        }
      }
    }
}

void twin_dropout(float* data, const DropoutScalars& mask, uint64_t first_row, int rows,
                  int channels) {
  const std::size_t count = static_cast<std::size_t>(rows) * channels;
  for (std::size_t i = 0; i < count; ++i)  // the kernel's element i, as its lambda computes it
    data[i] *= dropout_factor(mask, first_row + i / static_cast<std::size_t>(channels),
                              i % static_cast<std::size_t>(channels));
}

void twin_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                          int rows, int channels) {
  for (int r = 0; r < rows; ++r) {
    const float* x = inp + static_cast<std::size_t>(r) * channels;
    const float s = rmsnorm_rstd(warp_row_sum(channels, [&](int c) { return x[c] * x[c]; }) /
                                 static_cast<float>(channels));
    for (int c = 0; c < channels; ++c)
      out[static_cast<std::size_t>(r) * channels + c] = rmsnorm_out(x[c], s, weight[c]);
    rstd[r] = s;
  }
}

void twin_rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                           const float* weight, const float* rstd, int rows, int channels) {
  const auto at = [channels](int r, int c) { return static_cast<std::size_t>(r) * channels + c; };
  for (int r = 0; r < rows; ++r) {
    const float dnorm_norm_mean =
        warp_row_sum(channels, [&](int c) { return dout[at(r, c)] * weight[c] * (inp[at(r, c)] * rstd[r]); }) /
        static_cast<float>(channels);
    for (int c = 0; c < channels; ++c)
      dinp[at(r, c)] += rmsnorm_dinp(dout[at(r, c)] * weight[c], inp[at(r, c)] * rstd[r],
                                     dnorm_norm_mean, rstd[r]);
  }
  for (int c = 0; c < channels; ++c)
    dweight[c] += ordered_row_sum(rows, [&](int r) {
      return static_cast<double>(inp[at(r, c)] * rstd[r] * dout[at(r, c)]);
    });
}

void twin_swiglu_forward(float* out, const float* gate, const float* up, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = swiglu_forward(gate[i], up[i]);
}

void twin_swiglu_backward(float* dgate, float* dup, const float* gate, const float* up,
                          const float* dout, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const SwigluGrad g = swiglu_backward(gate[i], up[i], dout[i]);
    dgate[i] += g.dgate;
    dup[i] += g.dup;
  }
}

void twin_rope(float* data, int batch, int sequence, int row_channels, int heads, int head_size,
               double theta, bool inverse) {
  const int half = head_size / 2;
  const std::size_t pairs = static_cast<std::size_t>(batch) * sequence * heads * half;
  for (std::size_t p = 0; p < pairs; ++p) {  // one thread per pair
    const int i = static_cast<int>(p % half);
    const std::size_t head_row = p / half, n = head_row / heads;
    const int h = static_cast<int>(head_row % heads);
    const RopeRotation r = rope_rotation(static_cast<int>(n % sequence), i, head_size, theta);
    float* x = data + n * row_channels + static_cast<std::size_t>(h) * head_size;
    const RopePair out = inverse ? rope_rotate_back(x[i], x[i + half], r) : rope_rotate(x[i], x[i + half], r);
    x[i] = out.first;
    x[i + half] = out.second;
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

double twin_sum_of_squares(const std::vector<const float*>& tensors, const std::vector<std::size_t>& counts) {
  double total = 0;
  for (const gpu::AdamwChunk& chunk : gpu::adamw_chunks(counts)) {  // one block per chunk
    double lanes[kBlockThreads] = {};
    for (std::uint32_t i = 0; i < chunk.count; ++i) {  // thread i % kBlockThreads, in stride order
      const double v = tensors[chunk.tensor][chunk.offset + i];
      lanes[i % kBlockThreads] += v * v;
    }
    for (unsigned stride = kBlockThreads / 2; stride > 0; stride /= 2)
      for (unsigned t = 0; t < stride; ++t) lanes[t] += lanes[t + stride];
    total += lanes[0];
  }
  return total;
}

void twin_sgd(const std::vector<float*>& params, const std::vector<const float*>& grads,
              const std::vector<float*>& momentum_buffers, const std::vector<std::size_t>& counts,
              double lr, double momentum, double weight_decay) {
  const SgdScalars s = sgd_scalars(lr, momentum, weight_decay);
  for (const gpu::AdamwChunk& chunk : gpu::adamw_chunks(counts))  // one block per chunk
    for (std::uint32_t i = 0; i < chunk.count; ++i) {
      const std::size_t e = chunk.offset + i;
      sgd_element(params[chunk.tensor][e], grads[chunk.tensor][e], momentum_buffers[chunk.tensor][e], s);
    }
}

}  // namespace whale::exec::test

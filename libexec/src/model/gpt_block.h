// File: gpt_block.h
// Private: one pre-LN transformer block as a tensor-parallel shard (Megatron column/row
// splits with one all-reduce each way per sub-layer), and the activations it keeps.
#pragma once

#include "model/gpt_parameters.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::gpt {

/// Makes `buffer` hold `count` floats of backend memory, keeping its memory (and contents) when it
/// already has that size: for outputs that an op overwrites entirely, which then skip a fresh
/// buffer's zero fill.
inline void reuse_or_allocate(Buffer& buffer, Backend& backend, std::size_t count) {
  if (buffer.empty() || buffer.count() != count) buffer = Buffer(backend, count);
}

/// A parameter shard: its value and its gradient (backend memory).
struct Param {
  float* value = nullptr;
  float* grad = nullptr;
};

/// In layer_parameters order.
struct BlockParams {
  Param ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

/// What backward needs of one block and one micro-batch. N = B*T rows, Cl = C/tp, Fl = F/tp,
/// NHl = NH/tp. A forward overwrites every buffer, so the owner may pass the same activations
/// again for a later micro-batch (their memory is reused).
struct BlockActivations {
  Buffer ln1, ln1_mean, ln1_rstd;  // (N, C), (N), (N)
  Buffer qkv;                      // (N, 3*Cl): this shard's heads
  Buffer probs;                    // (B, NHl, T, T); empty when dropped (selective recompute)
  Buffer atty;                     // (N, Cl)
  Buffer x_mid;                    // (N, C): x_in + attention
  Buffer ln2, ln2_mean, ln2_rstd;  // (N, C), (N), (N)
  Buffer fc1;                      // (N, Fl): before GELU
  Buffer gelu;                     // (N, Fl)
};

/// Scratch memory of the blocks of one stage (they run one at a time): backward's gradients
/// and the attention outputs that are not kept. Reused across calls without zero fills; every
/// use overwrites (or first zeroes) what it reads.
struct BlockScratch {
  Buffer dgelu, dfc1, dln2, dx_mid, datty, dqkv, dln1;  // backward
  Buffer probs, atty;  // dropped attention probabilities (selective recompute), their output
};

class Block {
 public:
  /// tp may be null when tp_size == 1; scratch must outlive the block.
  Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
        Communicator* tp, BlockScratch& scratch);

  /// x_out (N, C) = block(x_in (N, C)), overwritten; fills acts (overwriting what they held),
  /// keeping the attention probabilities only when keep_probs.
  void forward(int batch, const float* x_in, float* x_out, BlockActivations& acts,
               bool keep_probs);
  /// dx_in (N, C) = d loss / d x_in (overwritten), given dx_out; accumulates the
  /// parameter gradients. Recomputes the attention probabilities (into a scratch buffer) when
  /// acts.probs is empty. Leaves acts as they were.
  void backward(int batch, const float* x_in, const float* dx_out, float* dx_in,
                const BlockActivations& acts);

 private:
  /// The tensor-parallel sum of partial results (the f/g operators); none when tp == 1.
  void tp_all_reduce(float* data, std::size_t count);
  /// dinp (rows, in) = dout (rows, out) * w (overwritten); w.grad += dout^T inp; dbias (when not
  /// null) += column sums of dout.
  void linear_gradients(float* dinp, const Param& w, float* dbias, const float* dout,
                        const float* inp, int rows, int in_channels, int out_channels);

  Dims dims_;
  int channels_local_, heads_local_, ffn_local_;
  BlockParams p_;
  Backend& be_;
  Communicator* tp_;
  BlockScratch* scratch_;
};

}  // namespace whale::exec::gpt

// File: gpt_block.h
// Private: one pre-LN transformer block as a tensor-parallel shard (Megatron column/row
// splits with one all-reduce each way per sub-layer), and the activations it keeps.
#pragma once

#include "gpt_parameters.h"
#include "whale/exec/backend.h"
#include "whale/exec/communicator.h"
#include "whale/exec/tensor.h"

namespace whale::exec::gpt {

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
/// NHl = NH/tp.
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

class Block {
 public:
  /// tp may be null when tp_size == 1.
  Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
        Communicator* tp);

  /// x_out (N, C) = block(x_in (N, C)); fills acts, keeping the attention probabilities only
  /// when keep_probs.
  void forward(int batch, const float* x_in, float* x_out, BlockActivations& acts,
               bool keep_probs);
  /// dx_in (N, C, zeroed by the caller) += d loss / d x_in, given dx_out; accumulates the
  /// parameter gradients. Recomputes the attention probabilities when acts.probs is empty.
  void backward(int batch, const float* x_in, const float* dx_out, float* dx_in,
                BlockActivations& acts);

 private:
  /// The tensor-parallel sum of partial results (the f/g operators); none when tp == 1.
  void tp_all_reduce(float* data, std::size_t count);

  Dims dims_;
  int channels_local_, heads_local_, ffn_local_;
  BlockParams p_;
  Backend& be_;
  Communicator* tp_;
};

}  // namespace whale::exec::gpt

// File: gpt_block.h
// Private: one pre-LN transformer block as a tensor-parallel shard (Megatron column/row
// splits with one all-reduce each way per sub-layer), and the activations it keeps.
#pragma once

#include "model/gpt_parameters.h"
#include "model/tensor_parallel_ops.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::gpt {

using exec::Param;

/// In layer_parameters order.
struct BlockParams {
  Param ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

/// What backward needs of one block and one micro-batch, in the compute dtype ("act"; layernorm
/// statistics fp32). N = B*T rows, Cl = C/tp, Fl = F/tp,
/// NHl = NH/tp. A forward overwrites every buffer, so the owner may pass the same activations
/// again for a later micro-batch (their memory is reused).
struct BlockActivations {
  Tensor ln1, ln1_mean, ln1_rstd;  // (N, C), (N), (N)
  Tensor qkv;                      // (N, 3*Cl): this shard's heads
  Tensor probs;                    // (B, NHl, T, T); empty when dropped (selective recompute)
  Tensor atty;                     // (N, Cl)
  Tensor x_mid;                    // (N, C): x_in + attention
  Tensor ln2, ln2_mean, ln2_rstd;  // (N, C), (N), (N)
  Tensor fc1;                      // (N, Fl): before GELU
  Tensor gelu;                     // (N, Fl)
};

/// Scratch memory of the blocks of one stage (they run one at a time): backward's gradients
/// and the attention outputs that are not kept. Reused across calls without zero fills; every
/// use overwrites (or first zeroes) what it reads.
struct BlockScratch {
  Tensor dgelu, dfc1, dln2, dx_mid, datty, dqkv, dln1;  // backward
  Tensor probs, atty;  // dropped attention probabilities (selective recompute), their output
};

class Block {
 public:
  /// tp may be null when tp_size == 1; scratch and weight_gradients (the stage's, which
  /// defers the linears' weight gradients in a split backward) must outlive the block.
  Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
        Communicator* tp, BlockScratch& scratch, WeightGradients& weight_gradients);

  /// x_out (N, C) = block(x_in (N, C)), overwritten; fills acts (overwriting what they held),
  /// keeping the attention probabilities only when keep_probs.
  void forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& acts,
               bool keep_probs);
  /// dx_in (N, C) = d loss / d x_in (overwritten), given dx_out; accumulates the
  /// parameter gradients. Recomputes the attention probabilities (into a scratch buffer) when
  /// acts.probs is empty. Leaves acts as they were.
  void backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                const BlockActivations& acts);

 private:
  /// TensorParallelOps::all_reduce and linear_gradients (tensor_parallel_ops.h).
  void tp_all_reduce(TensorView data);
  void linear_gradients(TensorView dinp, const Param& w, TensorView dbias, ConstTensorView dout,
                        ConstTensorView inp, int rows, int in_channels, int out_channels);

  Dims dims_;
  int channels_local_, heads_local_, ffn_local_;
  BlockParams p_;
  Backend& be_;
  Communicator* tp_;
  BlockScratch* scratch_;
  DType act_;                   // the backend's compute dtype
  TensorParallelOps tp_ops_;    // shared with the other block families
};

}  // namespace whale::exec::gpt

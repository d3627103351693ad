// File: gpt_block.h
// Private: one pre-LN transformer block as a tensor-parallel shard (Megatron column/row
// splits; the borders of each sub-layer's tensor-parallel region exchange as
// tensor_parallel_region.h says: all-reduces, or under sequence parallelism all-gathers and
// reduce-scatters), and the activations it keeps.
#pragma once

#include <optional>

#include "model/gpt_parameters.h"
#include "model/layer_dropout.h"
#include "model/moe_layer.h"
#include "model/tensor_parallel_ops.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::gpt {

using exec::Param;

/// In layer_parameters order.
struct BlockParams {
  Param ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
  MoeParams moe;  // a mixture-of-experts block's (its fc1/fc2 stay empty)
};

/// What backward needs of one block and one micro-batch, in the compute dtype ("act"; layernorm
/// statistics fp32). N = B*T rows, Nh = the rows held outside the tensor-parallel regions
/// (N, or N/tp under sequence parallelism), Cl = C/tp, Fl = F/tp, NHl = NH/tp. A forward
/// overwrites every buffer, so the owner may pass the same activations again for a later
/// micro-batch (their memory is reused).
struct BlockActivations {
  Tensor ln1, ln1_mean, ln1_rstd;  // (Nh, C), (Nh), (Nh)
  Tensor qkv;                      // (N, 3*Cl): this shard's heads
  Tensor probs;  // attention_saved_count elements (CPU: (B, NHl, T, T)); empty when dropped
  Tensor atty;                     // (N, Cl)
  Tensor x_mid;                    // (Nh, C): x_in + attention
  Tensor ln2, ln2_mean, ln2_rstd;  // (Nh, C), (Nh), (Nh)
  Tensor fc1;                      // (N, Fl): before GELU
  Tensor gelu;                     // (N, Fl)
  MoeActivations moe;              // a mixture-of-experts block's, instead of fc1 and gelu
};

/// Scratch memory of the blocks of one stage (they run one at a time): backward's gradients
/// and the attention outputs that are not kept. Reused across calls without zero fills; every
/// use overwrites (or first zeroes) what it reads.
struct BlockScratch {
  Tensor dgelu, dfc1, dln2, dx_mid, datty, dqkv, dln1;  // backward
  Tensor dropped;  // (Nh, C): a sub-layer output's gradient through its dropout mask
  Tensor probs, atty;  // dropped attention probabilities (selective recompute), their output
  Tensor gathered, partial;  // (N, C) at the region borders under sequence parallelism
  MoeScratch moe;
};

class Block {
 public:
  /// `region` (the stage's tensor group), scratch and weight_gradients (the stage's, which
  /// defers the linears' weight gradients in a split backward) must outlive the block.
  /// `moe` (the stage's; null for a dense block) makes the MLP a MoeLayer of params.moe.
  /// `dropout`: the layer's sites (attention probabilities, both sub-layers' outputs).
  Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
        TensorParallelRegion& region, BlockScratch& scratch, WeightGradients& weight_gradients,
        const MoeContext* moe, const LayerDropout& dropout);

  /// x_out (Nh, C) = block(x_in (Nh, C)), overwritten; fills acts (overwriting what they
  /// held), keeping the attention probabilities only when keep_probs. The dropout masks are
  /// `draw`'s; backward (and a recomputing forward) must be given the same.
  void forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& acts,
               bool keep_probs, const MicroBatchDraw& draw);
  /// dx_in (Nh, C) = d loss / d x_in (overwritten), given dx_out; accumulates the parameter
  /// gradients (those of the layernorms and of the biases after the row-parallel linears
  /// summed over the tensor group under sequence parallelism). Recomputes the attention
  /// probabilities (into a scratch buffer) when acts.probs is empty. Leaves acts as they were.
  void backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                const BlockActivations& acts, const MicroBatchDraw& draw);

 private:
  /// The dense MLP's part of backward: g.dln2 = d loss / d ln2 output, given dmlp, the
  /// gradient of the MLP's output (after its dropout's mask).
  void mlp_backward(int batch, ConstTensorView dmlp, const BlockActivations& acts);
  /// The attention's part: dx_in from g.dx_mid (the gradient of x_mid).
  void attention_backward(int batch, ConstTensorView x_in, TensorView dx_in,
                          const BlockActivations& acts, const MicroBatchDraw& draw);

  Dims dims_;
  int channels_local_, heads_local_, ffn_local_;
  BlockParams p_;
  Backend& be_;
  BlockScratch* scratch_;
  DType act_;                 // the backend's compute dtype
  TensorParallelOps tp_ops_;  // shared with the other block families
  std::optional<MoeLayer> moe_;  // set for a mixture-of-experts block
  LayerDropout dropout_;
};

}  // namespace whale::exec::gpt

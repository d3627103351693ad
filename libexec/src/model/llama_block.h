// File: llama_block.h
// Private: one Llama block as a tensor-parallel shard: RMSNorm, fused QKV (column-split by
// query and key/value heads, optional bias), RoPE, causal grouped-query attention, output
// projection (row-split) + residual; RMSNorm, gate and up (column-split), SwiGLU, down
// (row-split) + residual. No biases outside qkv. The borders of each sub-layer's
// tensor-parallel region exchange as tensor_parallel_region.h says (all-reduces, or under
// sequence parallelism all-gathers and reduce-scatters). Dropout on the attention probabilities
// where the model asks for it (attention_dropout; layer_dropout.h); Llama has no hidden dropout.
#pragma once

#include <optional>

#include "model/layer_dropout.h"
#include "model/llama_parameters.h"
#include "model/moe_layer.h"
#include "model/tensor_parallel_ops.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"

namespace whale::exec::llama {

/// In layer_parameters order; qkv_b is empty without qkv biases.
struct BlockParams {
  Param attn_norm, qkv_w, qkv_b, proj_w, mlp_norm, gate_w, up_w, down_w;
  MoeParams moe;  // a mixture-of-experts block's (its gate, up and down stay empty)
};

/// What backward needs of one block and one micro-batch, in the compute dtype (rstd fp32).
/// N = B*T rows, Nh = the rows held outside the tensor-parallel regions (N, or N/tp under
/// sequence parallelism), Wl = (NHl + 2 KVl) HS the local qkv width, Fl = F/tp, NHl = NH/tp.
/// A forward overwrites every buffer, so the same activations serve a later micro-batch.
struct BlockActivations {
  Tensor norm1, rstd1;      // (Nh, C), (Nh)
  Tensor qkv;               // (N, Wl): this shard's heads, q and k rotated
  Tensor probs;  // attention_saved_count elements (CPU: (B, NHl, T, T)); empty when dropped
  Tensor atty;              // (N, NHl*HS)
  Tensor x_mid;             // (Nh, C): x_in + attention
  Tensor norm2, rstd2;      // (Nh, C), (Nh)
  Tensor gate, up;          // (N, Fl) each
  Tensor swiglu;            // (N, Fl)
  MoeActivations moe;       // a mixture-of-experts block's, instead of gate, up and swiglu
};

/// Backward's gradients and the attention outputs that are not kept, shared by the blocks of
/// a stage (they run one at a time). Every use overwrites (or first zeroes) what it reads.
struct BlockScratch {
  Tensor dswiglu, dgate, dup, dnorm2, dx_mid, datty, dqkv, dnorm1;
  Tensor probs, atty;  // recomputed attention (selective recomputation)
  Tensor gathered, partial;  // (N, C) at the region borders under sequence parallelism
  MoeScratch moe;
};

class Block {
 public:
  /// `moe` (the stage's; null for a dense block) makes the MLP a MoeLayer of params.moe.
  /// `region` (the stage's tensor group), scratch and weight_gradients (the stage's, which
  /// defers the linears' weight gradients in a split backward) must outlive the block.
  /// `dropout`: the layer's sites (its attention probabilities').
  Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
        TensorParallelRegion& region, BlockScratch& scratch, WeightGradients& weight_gradients,
        const MoeContext* moe, const LayerDropout& dropout);

  /// x_out (Nh, C) = block(x_in (Nh, C)), overwritten; fills acts, keeping the attention
  /// probabilities only when keep_probs. The dropout masks are `draw`'s; backward (and a
  /// recomputing forward) must be given the same.
  void forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& acts,
               bool keep_probs, const MicroBatchDraw& draw);
  /// dx_in (Nh, C) = d loss / d x_in (overwritten); accumulates the parameter gradients (those
  /// of the RMSNorms summed over the tensor group under sequence parallelism). Recomputes the
  /// attention probabilities when acts.probs is empty.
  void backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                const BlockActivations& acts, const MicroBatchDraw& draw);

 private:
  /// The attention of a micro-batch of `batch` samples over acts' qkv into out and probs.
  void attend(int batch, ConstTensorView qkv, TensorView out, TensorView probs,
              const MicroBatchDraw& draw);

  Dims dims_;
  int heads_local_, kv_heads_local_, qkv_local_, ffn_local_;
  BlockParams p_;
  Backend& be_;
  BlockScratch* scratch_;
  DType act_;
  TensorParallelOps tp_ops_;
  std::optional<MoeLayer> moe_;  // set for a mixture-of-experts block
  LayerDropout dropout_;
};

}  // namespace whale::exec::llama

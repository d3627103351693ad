// File: gpt_block.cpp
// The transformer block: LN, [enter] QKV (column-split by heads), causal attention, proj
// (row-split) [leave] + bias + residual; LN, [enter] fc1 (column-split), GELU, fc2 (row-split)
// [leave] + bias + residual. [enter]/[leave] are the tensor-parallel region's borders
// (tensor_parallel_region.h); backward crosses them the other way. Dropout (layer_dropout.h) on
// the attention probabilities and on each sub-layer's output before its residual add.
#include "model/gpt_block.h"

#include <vector>

namespace whale::exec::gpt {

Block::Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
             TensorParallelRegion& region, BlockScratch& scratch,
             WeightGradients& weight_gradients, const MoeContext* moe,
             const LayerDropout& dropout)
    : dims_(dims),
      channels_local_(dims.channels / tp_size),
      heads_local_(dims.heads / tp_size),
      ffn_local_(dims.ffn / tp_size),
      p_(params),
      be_(backend),
      scratch_(&scratch),
      act_(backend.compute_dtype()),
      tp_ops_(backend, region, weight_gradients),
      dropout_(dropout) {
  if (moe) moe_.emplace(dims.channels, params.moe, backend, *moe, scratch.moe, tp_ops_);
}

void Block::forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& a,
                    bool keep_probs, const MicroBatchDraw& draw) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  TensorParallelRegion& region = tp_ops_.region();
  const int N = batch * T, Nh = region.held_rows(N);
  const std::size_t NC = static_cast<std::size_t>(N) * C, NhC = static_cast<std::size_t>(Nh) * C;
  BlockScratch& g = *scratch_;
  reuse_or_allocate(a.ln1, be_, NhC, act_);
  reuse_or_allocate(a.ln1_mean, be_, Nh, DType::fp32);
  reuse_or_allocate(a.ln1_rstd, be_, Nh, DType::fp32);
  be_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x_in,
                        p_.ln1_w.value, p_.ln1_b.value, Nh, C);
  reuse_or_allocate(a.qkv, be_, static_cast<std::size_t>(N) * 3 * Cl, act_);
  be_.linear_forward(a.qkv, region.enter(a.ln1, g.gathered), p_.qkv_w.value, p_.qkv_b.value,
                     N, C, 3 * Cl);
  reuse_or_allocate(a.atty, be_, static_cast<std::size_t>(N) * Cl, act_);
  // A backend that recomputes the scores saves a state linear in T: kept even under
  // selective recomputation (dropping it would only re-run the forward in backward).
  const bool keep_saved = keep_probs || be_.attention_recomputes_scores();
  Tensor& probs = keep_saved ? a.probs : scratch_->probs;
  reuse_or_allocate(probs, be_, be_.attention_saved_count(batch, T, heads_local_, dims_.head_size(), act_), act_);
  const AttentionDropout attention_dropout = dropout_.attention(draw);
  be_.attention_forward(a.atty, probs, a.qkv, batch, T, heads_local_, heads_local_,
                        dims_.head_size(), attention_dropout);
  if (!keep_saved) a.probs.reset();  // backward recomputes them
  reuse_or_allocate(a.x_mid, be_, NhC, act_);
  const TensorView attention_sum = region.all_rows(a.x_mid, g.partial, NC);
  // A row-parallel linear's bias is added once, after the group's sum; with one rank, in the product.
  be_.linear_forward(attention_sum, a.atty, p_.proj_w.value,
                     region.single() ? p_.proj_b.value : ConstTensorView{}, N, Cl, C);
  region.leave(attention_sum, a.x_mid);
  if (!region.single()) be_.bias_add_forward(a.x_mid, p_.proj_b.value, Nh, C);
  dropout_.apply(be_, a.x_mid, N, draw, DropoutPlace::attention_output);
  be_.add_forward(a.x_mid, a.x_mid, x_in, NhC);

  reuse_or_allocate(a.ln2, be_, NhC, act_);
  reuse_or_allocate(a.ln2_mean, be_, Nh, DType::fp32);
  reuse_or_allocate(a.ln2_rstd, be_, Nh, DType::fp32);
  be_.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.x_mid,
                        p_.ln2_w.value, p_.ln2_b.value, Nh, C);
  if (moe_) {  // whole rows (no sequence parallelism); the layer sums over the tp group
    moe_->forward(N, a.ln2, x_out, a.moe);
    dropout_.apply(be_, x_out, N, draw, DropoutPlace::mlp_output);
    be_.add_forward(x_out, x_out, a.x_mid, NhC);
    return;
  }
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;
  reuse_or_allocate(a.fc1, be_, NF, act_);
  be_.linear_forward(a.fc1, region.enter(a.ln2, g.gathered), p_.fc1_w.value, p_.fc1_b.value,
                     N, C, Fl);
  reuse_or_allocate(a.gelu, be_, NF, act_);
  be_.gelu_forward(a.gelu, a.fc1, NF);
  const TensorView mlp_sum = region.all_rows(x_out, g.partial, NC);
  be_.linear_forward(mlp_sum, a.gelu, p_.fc2_w.value,
                     region.single() ? p_.fc2_b.value : ConstTensorView{}, N, Fl, C);
  region.leave(mlp_sum, x_out);
  if (!region.single()) be_.bias_add_forward(x_out, p_.fc2_b.value, Nh, C);
  dropout_.apply(be_, x_out, N, draw, DropoutPlace::mlp_output);
  be_.add_forward(x_out, x_out, a.x_mid, NhC);
}

void Block::backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                     const BlockActivations& a, const MicroBatchDraw& draw) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  TensorParallelRegion& region = tp_ops_.region();
  const int N = batch * T, Nh = region.held_rows(N);
  const std::size_t NhC = static_cast<std::size_t>(Nh) * C;
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;

  BlockScratch& g = *scratch_;
  if (!moe_)
    for (Tensor* b : {&g.dgelu, &g.dfc1}) reuse_or_allocate(*b, be_, NF, act_);
  for (Tensor* b : {&g.dln2, &g.dx_mid, &g.dln1}) reuse_or_allocate(*b, be_, NhC, act_);
  reuse_or_allocate(g.datty, be_, static_cast<std::size_t>(N) * Cl, act_);
  reuse_or_allocate(g.dqkv, be_, static_cast<std::size_t>(N) * 3 * Cl, act_);
  std::vector<TensorView> held_row_gradients = {p_.ln1_w.grad, p_.ln1_b.grad, p_.proj_b.grad,
                                                p_.ln2_w.grad, p_.ln2_b.grad};
  if (!moe_) held_row_gradients.push_back(p_.fc2_b.grad);
  region.begin_held_row_gradients(held_row_gradients);

  const ConstTensorView dmlp =
      dropout_.gradient(be_, dx_out, g.dropped, N, draw, DropoutPlace::mlp_output);
  if (moe_) {  // x_out = x_mid + dropout(moe(ln2(x_mid))); the layer sums over the tp group
    moe_->backward(N, a.ln2, dmlp, g.dln2, a.moe);
  } else {
    mlp_backward(batch, dmlp, a);
  }
  be_.copy(g.dx_mid, dx_out, Stream::compute);  // the residual path
  be_.layernorm_backward(g.dx_mid, p_.ln2_w.grad, p_.ln2_b.grad, g.dln2,
                         a.x_mid, p_.ln2_w.value, a.ln2_mean, a.ln2_rstd,
                         Nh, C);
  attention_backward(batch, x_in, dx_in, a, draw);
  region.end_held_row_gradients(held_row_gradients);
}

void Block::mlp_backward(int batch, ConstTensorView dmlp, const BlockActivations& a) {
  const int T = dims_.sequence, C = dims_.channels, Fl = ffn_local_;
  TensorParallelRegion& region = tp_ops_.region();
  const int N = batch * T, Nh = region.held_rows(N);
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;
  BlockScratch& g = *scratch_;
  // MLP: x_out = x_mid + dropout(fc2(gelu(fc1(ln2(x_mid))))).
  tp_ops_.linear_gradients(g.dgelu, p_.fc2_w, TensorView{}, region.enter(dmlp, g.gathered),
                           a.gelu, N, Fl, C);
  be_.bias_add_backward(p_.fc2_b.grad, dmlp, Nh, C);
  be_.fill_zero(g.dfc1, Stream::compute);
  be_.gelu_backward(g.dfc1, a.fc1, g.dgelu, NF);
  const TensorView dln2_sum = region.all_rows(g.dln2, g.partial, NC);
  tp_ops_.linear_gradients(dln2_sum, p_.fc1_w, p_.fc1_b.grad, g.dfc1,
                           region.enter(a.ln2, g.gathered), N, C, Fl);
  region.leave(dln2_sum, g.dln2);
}

void Block::attention_backward(int batch, ConstTensorView x_in, TensorView dx_in,
                               const BlockActivations& a, const MicroBatchDraw& draw) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_;
  TensorParallelRegion& region = tp_ops_.region();
  const int N = batch * T, Nh = region.held_rows(N);
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  BlockScratch& g = *scratch_;
  // Attention: x_mid = x_in + dropout(proj(attention(qkv(ln1(x_in))))).
  const ConstTensorView dproj =
      dropout_.gradient(be_, g.dx_mid, g.dropped, N, draw, DropoutPlace::attention_output);
  tp_ops_.linear_gradients(g.datty, p_.proj_w, TensorView{}, region.enter(dproj, g.gathered),
                           a.atty, N, Cl, C);
  be_.bias_add_backward(p_.proj_b.grad, dproj, Nh, C);
  const AttentionDropout attention_dropout = dropout_.attention(draw);
  ConstTensorView probs = a.probs;
  if (a.probs.empty()) {  // selective recomputation: the same op on the same qkv
    reuse_or_allocate(g.probs, be_, be_.attention_saved_count(batch, T, heads_local_, dims_.head_size(), act_),
                      act_);
    reuse_or_allocate(g.atty, be_, static_cast<std::size_t>(N) * Cl, act_);
    be_.attention_forward(g.atty, g.probs, a.qkv, batch, T, heads_local_, heads_local_,
                          dims_.head_size(), attention_dropout);
    probs = g.probs;
  }
  be_.fill_zero(g.dqkv, Stream::compute);
  be_.attention_backward(g.dqkv, g.datty, a.qkv, probs, batch, T, heads_local_, heads_local_,
                         dims_.head_size(), attention_dropout);
  const TensorView dln1_sum = region.all_rows(g.dln1, g.partial, NC);
  tp_ops_.linear_gradients(dln1_sum, p_.qkv_w, p_.qkv_b.grad, g.dqkv,
                           region.enter(a.ln1, g.gathered), N, C, 3 * Cl);
  region.leave(dln1_sum, g.dln1);
  be_.copy(dx_in, g.dx_mid, Stream::compute);  // the residual path
  be_.layernorm_backward(dx_in, p_.ln1_w.grad, p_.ln1_b.grad, g.dln1, x_in,
                         p_.ln1_w.value, a.ln1_mean, a.ln1_rstd, Nh, C);
}

}  // namespace whale::exec::gpt

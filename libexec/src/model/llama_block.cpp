// File: llama_block.cpp
// The Llama block's forward and backward (see llama_block.h). Its tensor-parallel regions
// are entered and left as the GPT block's are: RMSNorm [enter] qkv ... proj [leave]; RMSNorm
// [enter] gate, up ... down [leave]; backward crosses them the other way.
#include "model/llama_block.h"

#include <vector>

namespace whale::exec::llama {

Block::Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
             TensorParallelRegion& region, BlockScratch& scratch,
             WeightGradients& weight_gradients, const MoeContext* moe,
             const LayerDropout& dropout)
    : dims_(dims),
      heads_local_(dims.heads / tp_size),
      kv_heads_local_(dims.kv_heads / tp_size),
      qkv_local_(dims.qkv_rows() / tp_size),
      ffn_local_(dims.ffn / tp_size),
      p_(params),
      be_(backend),
      scratch_(&scratch),
      act_(backend.compute_dtype()),
      tp_ops_(backend, region, weight_gradients),
      dropout_(dropout) {
  if (moe) moe_.emplace(dims.channels, params.moe, backend, *moe, scratch.moe, tp_ops_);
}

void Block::attend(int batch, ConstTensorView qkv, TensorView out, TensorView probs,
                   const MicroBatchDraw& draw) {
  be_.attention_forward(out, probs, qkv, batch, dims_.sequence, heads_local_, kv_heads_local_,
                        dims_.head_size(), dropout_.attention(draw));
}

void Block::forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& a,
                    bool keep_probs, const MicroBatchDraw& draw) {
  const int T = dims_.sequence, C = dims_.channels, HS = dims_.head_size();
  TensorParallelRegion& region = tp_ops_.region();
  const int N = batch * T, Nh = region.held_rows(N);
  const int W = qkv_local_, A = heads_local_ * HS, F = ffn_local_;
  const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;
  const std::size_t NhC = static_cast<std::size_t>(Nh) * C;
  BlockScratch& g = *scratch_;
  reuse_or_allocate(a.norm1, be_, NhC, act_);
  reuse_or_allocate(a.rstd1, be_, Nh, DType::fp32);
  be_.rmsnorm_forward(a.norm1, a.rstd1, x_in, p_.attn_norm.value, Nh, C);
  reuse_or_allocate(a.qkv, be_, static_cast<std::size_t>(N) * W, act_);
  be_.linear_forward(a.qkv, region.enter(a.norm1, g.gathered), p_.qkv_w.value, p_.qkv_b.value,
                     N, C, W);
  // Q and K are the first NHl + KVl heads of each row.
  be_.rope_forward(a.qkv, batch, T, W, heads_local_ + kv_heads_local_, HS, dims_.rope_theta);
  reuse_or_allocate(a.atty, be_, static_cast<std::size_t>(N) * A, act_);
  // A backend that recomputes the scores saves a state linear in T: kept even under
  // selective recomputation (dropping it would only re-run the forward in backward).
  const bool keep_saved = keep_probs || be_.attention_recomputes_scores();
  Tensor& probs = keep_saved ? a.probs : scratch_->probs;
  reuse_or_allocate(probs, be_, be_.attention_saved_count(batch, T, heads_local_, HS, act_), act_);
  attend(batch, a.qkv, a.atty, probs, draw);
  if (!keep_saved) a.probs.reset();  // backward recomputes them
  reuse_or_allocate(a.x_mid, be_, NhC, act_);
  const TensorView attention_sum = region.all_rows(a.x_mid, g.partial, NC);
  be_.linear_forward(attention_sum, a.atty, p_.proj_w.value, TensorView{}, N, A, C);
  region.leave(attention_sum, a.x_mid);
  be_.add_forward(a.x_mid, a.x_mid, x_in, NhC);

  reuse_or_allocate(a.norm2, be_, NhC, act_);
  reuse_or_allocate(a.rstd2, be_, Nh, DType::fp32);
  be_.rmsnorm_forward(a.norm2, a.rstd2, a.x_mid, p_.mlp_norm.value, Nh, C);
  if (moe_) {  // whole rows (no sequence parallelism); the layer sums over the tp group
    moe_->forward(N, a.norm2, x_out, a.moe);
    be_.add_forward(x_out, x_out, a.x_mid, NhC);
    return;
  }
  for (Tensor* t : {&a.gate, &a.up, &a.swiglu}) reuse_or_allocate(*t, be_, NF, act_);
  const ConstTensorView norm2_all = region.enter(a.norm2, g.gathered);
  be_.linear_forward(a.gate, norm2_all, p_.gate_w.value, TensorView{}, N, C, F);
  be_.linear_forward(a.up, norm2_all, p_.up_w.value, TensorView{}, N, C, F);
  be_.swiglu_forward(a.swiglu, a.gate, a.up, NF);
  const TensorView mlp_sum = region.all_rows(x_out, g.partial, NC);
  be_.linear_forward(mlp_sum, a.swiglu, p_.down_w.value, TensorView{}, N, F, C);
  region.leave(mlp_sum, x_out);
  be_.add_forward(x_out, x_out, a.x_mid, NhC);
}

void Block::backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                     const BlockActivations& a, const MicroBatchDraw& draw) {
  const int T = dims_.sequence, C = dims_.channels, HS = dims_.head_size();
  TensorParallelRegion& region = tp_ops_.region();
  const int N = batch * T, Nh = region.held_rows(N);
  const int W = qkv_local_, A = heads_local_ * HS, F = ffn_local_;
  const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;
  const std::size_t NhC = static_cast<std::size_t>(Nh) * C;
  BlockScratch& g = *scratch_;
  if (!moe_)
    for (Tensor* t : {&g.dswiglu, &g.dgate, &g.dup}) reuse_or_allocate(*t, be_, NF, act_);
  for (Tensor* t : {&g.dnorm2, &g.dx_mid, &g.dnorm1}) reuse_or_allocate(*t, be_, NhC, act_);
  reuse_or_allocate(g.datty, be_, static_cast<std::size_t>(N) * A, act_);
  reuse_or_allocate(g.dqkv, be_, static_cast<std::size_t>(N) * W, act_);
  const std::vector<TensorView> held_row_gradients = {p_.attn_norm.grad, p_.mlp_norm.grad};
  region.begin_held_row_gradients(held_row_gradients);

  if (moe_) {  // x_out = x_mid + moe(norm2); the layer sums over the tp group
    moe_->backward(N, a.norm2, dx_out, g.dnorm2, a.moe);
  } else {
    // MLP: x_out = x_mid + down(silu(gate(norm2)) * up(norm2)).
    tp_ops_.linear_gradients(g.dswiglu, p_.down_w, TensorView{},
                             region.enter(dx_out, g.gathered), a.swiglu, N, F, C);
    be_.fill_zero(g.dgate, Stream::compute);
    be_.fill_zero(g.dup, Stream::compute);
    be_.swiglu_backward(g.dgate, g.dup, a.gate, a.up, g.dswiglu, NF);
    const TensorView dnorm2_sum = region.all_rows(g.dnorm2, g.partial, NC);
    const ConstTensorView norm2_all = region.enter(a.norm2, g.gathered);
    tp_ops_.linear_gradients(dnorm2_sum, p_.gate_w, TensorView{}, g.dgate, norm2_all, N, C, F);
    tp_ops_.linear_gradients(dnorm2_sum, p_.up_w, TensorView{}, g.dup, norm2_all, N, C, F,
                             /*accumulate_input=*/true);  // adds the up projection's share
    region.leave(dnorm2_sum, g.dnorm2);
  }
  be_.copy(g.dx_mid, dx_out, Stream::compute);  // the residual path
  be_.rmsnorm_backward(g.dx_mid, p_.mlp_norm.grad, g.dnorm2, a.x_mid, p_.mlp_norm.value,
                       a.rstd2, Nh, C);

  // Attention: x_mid = x_in + proj(attention(rope(qkv(norm1(x_in))))).
  tp_ops_.linear_gradients(g.datty, p_.proj_w, TensorView{},
                           region.enter(g.dx_mid, g.gathered), a.atty, N, A, C);
  ConstTensorView probs = a.probs;
  if (a.probs.empty()) {  // selective recomputation: the same op on the same qkv
    reuse_or_allocate(g.probs, be_, be_.attention_saved_count(batch, T, heads_local_, HS, act_),
                      act_);
    reuse_or_allocate(g.atty, be_, static_cast<std::size_t>(N) * A, act_);
    attend(batch, a.qkv, g.atty, g.probs, draw);
    probs = g.probs;
  }
  be_.fill_zero(g.dqkv, Stream::compute);
  be_.attention_backward(g.dqkv, g.datty, a.qkv, probs, batch, T, heads_local_, kv_heads_local_,
                         HS, dropout_.attention(draw));
  be_.rope_backward(g.dqkv, batch, T, W, heads_local_ + kv_heads_local_, HS, dims_.rope_theta);
  const TensorView dnorm1_sum = region.all_rows(g.dnorm1, g.partial, NC);
  tp_ops_.linear_gradients(dnorm1_sum, p_.qkv_w, p_.qkv_b.grad, g.dqkv,
                           region.enter(a.norm1, g.gathered), N, C, W);
  region.leave(dnorm1_sum, g.dnorm1);
  be_.copy(dx_in, g.dx_mid, Stream::compute);  // the residual path
  be_.rmsnorm_backward(dx_in, p_.attn_norm.grad, g.dnorm1, x_in, p_.attn_norm.value, a.rstd1,
                       Nh, C);
  region.end_held_row_gradients(held_row_gradients);
}

}  // namespace whale::exec::llama

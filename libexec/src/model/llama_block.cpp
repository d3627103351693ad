// File: llama_block.cpp
// The Llama block's forward and backward (see llama_block.h). Backward all-reduces the input
// gradients of the column-split matmuls, as the GPT block does.
#include "model/llama_block.h"

namespace whale::exec::llama {

Block::Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
             Communicator* tp, BlockScratch& scratch, WeightGradients& weight_gradients)
    : dims_(dims),
      heads_local_(dims.heads / tp_size),
      kv_heads_local_(dims.kv_heads / tp_size),
      qkv_local_(dims.qkv_rows() / tp_size),
      ffn_local_(dims.ffn / tp_size),
      p_(params),
      be_(backend),
      scratch_(&scratch),
      act_(backend.compute_dtype()),
      tp_ops_(backend, tp_size > 1 ? tp : nullptr, weight_gradients) {}

void Block::attend(int batch, ConstTensorView qkv, TensorView out, TensorView probs) {
  be_.attention_forward(out, probs, qkv, batch, dims_.sequence, heads_local_, kv_heads_local_,
                        dims_.head_size());
}

void Block::forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& a,
                    bool keep_probs) {
  const int T = dims_.sequence, C = dims_.channels, HS = dims_.head_size();
  const int N = batch * T, W = qkv_local_, A = heads_local_ * HS, F = ffn_local_;
  const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;
  reuse_or_allocate(a.norm1, be_, NC, act_);
  reuse_or_allocate(a.rstd1, be_, N, DType::fp32);
  be_.rmsnorm_forward(a.norm1, a.rstd1, x_in, p_.attn_norm.value, N, C);
  reuse_or_allocate(a.qkv, be_, static_cast<std::size_t>(N) * W, act_);
  be_.linear_forward(a.qkv, a.norm1, p_.qkv_w.value, p_.qkv_b.value, N, C, W);
  // Q and K are the first NHl + KVl heads of each row.
  be_.rope_forward(a.qkv, batch, T, W, heads_local_ + kv_heads_local_, HS, dims_.rope_theta);
  reuse_or_allocate(a.atty, be_, static_cast<std::size_t>(N) * A, act_);
  Tensor& probs = keep_probs ? a.probs : scratch_->probs;
  reuse_or_allocate(probs, be_, static_cast<std::size_t>(batch) * heads_local_ * T * T, act_);
  attend(batch, a.qkv, a.atty, probs);
  if (!keep_probs) a.probs.reset();  // backward recomputes them
  reuse_or_allocate(a.x_mid, be_, NC, act_);
  be_.linear_forward(a.x_mid, a.atty, p_.proj_w.value, TensorView{}, N, A, C);
  tp_ops_.all_reduce(a.x_mid);
  be_.add_forward(a.x_mid, a.x_mid, x_in, NC);

  reuse_or_allocate(a.norm2, be_, NC, act_);
  reuse_or_allocate(a.rstd2, be_, N, DType::fp32);
  be_.rmsnorm_forward(a.norm2, a.rstd2, a.x_mid, p_.mlp_norm.value, N, C);
  for (Tensor* t : {&a.gate, &a.up, &a.swiglu}) reuse_or_allocate(*t, be_, NF, act_);
  be_.linear_forward(a.gate, a.norm2, p_.gate_w.value, TensorView{}, N, C, F);
  be_.linear_forward(a.up, a.norm2, p_.up_w.value, TensorView{}, N, C, F);
  be_.swiglu_forward(a.swiglu, a.gate, a.up, NF);
  be_.linear_forward(x_out, a.swiglu, p_.down_w.value, TensorView{}, N, F, C);
  tp_ops_.all_reduce(x_out);
  be_.add_forward(x_out, x_out, a.x_mid, NC);
}

void Block::backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                     const BlockActivations& a) {
  const int T = dims_.sequence, C = dims_.channels, HS = dims_.head_size();
  const int N = batch * T, W = qkv_local_, A = heads_local_ * HS, F = ffn_local_;
  const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;
  BlockScratch& g = *scratch_;
  for (Tensor* t : {&g.dswiglu, &g.dgate, &g.dup}) reuse_or_allocate(*t, be_, NF, act_);
  for (Tensor* t : {&g.dnorm2, &g.dx_mid, &g.dnorm1}) reuse_or_allocate(*t, be_, NC, act_);
  reuse_or_allocate(g.datty, be_, static_cast<std::size_t>(N) * A, act_);
  reuse_or_allocate(g.dqkv, be_, static_cast<std::size_t>(N) * W, act_);

  // MLP: x_out = x_mid + down(silu(gate(norm2)) * up(norm2)).
  tp_ops_.linear_gradients(g.dswiglu, p_.down_w, TensorView{}, dx_out, a.swiglu, N, F, C);
  be_.fill_zero(g.dgate, Stream::compute);
  be_.fill_zero(g.dup, Stream::compute);
  be_.swiglu_backward(g.dgate, g.dup, a.gate, a.up, g.dswiglu, NF);
  tp_ops_.linear_gradients(g.dnorm2, p_.gate_w, TensorView{}, g.dgate, a.norm2, N, C, F);
  tp_ops_.linear_gradients(g.dnorm2, p_.up_w, TensorView{}, g.dup, a.norm2, N, C, F,
                           /*accumulate_input=*/true);  // adds the up projection's share
  tp_ops_.all_reduce(g.dnorm2);
  be_.copy(g.dx_mid, dx_out, Stream::compute);  // the residual path
  be_.rmsnorm_backward(g.dx_mid, p_.mlp_norm.grad, g.dnorm2, a.x_mid, p_.mlp_norm.value,
                       a.rstd2, N, C);

  // Attention: x_mid = x_in + proj(attention(rope(qkv(norm1(x_in))))).
  tp_ops_.linear_gradients(g.datty, p_.proj_w, TensorView{}, g.dx_mid, a.atty, N, A, C);
  ConstTensorView probs = a.probs;
  if (a.probs.empty()) {  // selective recomputation: the same op on the same qkv
    reuse_or_allocate(g.probs, be_, static_cast<std::size_t>(batch) * heads_local_ * T * T, act_);
    reuse_or_allocate(g.atty, be_, static_cast<std::size_t>(N) * A, act_);
    attend(batch, a.qkv, g.atty, g.probs);
    probs = g.probs;
  }
  be_.fill_zero(g.dqkv, Stream::compute);
  be_.attention_backward(g.dqkv, g.datty, a.qkv, probs, batch, T, heads_local_, kv_heads_local_,
                         HS);
  be_.rope_backward(g.dqkv, batch, T, W, heads_local_ + kv_heads_local_, HS, dims_.rope_theta);
  tp_ops_.linear_gradients(g.dnorm1, p_.qkv_w, p_.qkv_b.grad, g.dqkv, a.norm1, N, C, W);
  tp_ops_.all_reduce(g.dnorm1);
  be_.copy(dx_in, g.dx_mid, Stream::compute);  // the residual path
  be_.rmsnorm_backward(dx_in, p_.attn_norm.grad, g.dnorm1, x_in, p_.attn_norm.value, a.rstd1, N,
                       C);
}

}  // namespace whale::exec::llama

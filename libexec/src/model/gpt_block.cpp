// File: gpt_block.cpp
// The transformer block: LN, QKV (column-split by heads), causal attention, proj (row-split)
// + all-reduce + bias + residual; LN, fc1 (column-split), GELU, fc2 (row-split) + all-reduce
// + bias + residual. Backward all-reduces the input gradients of the column-split matmuls.
#include "model/gpt_block.h"

namespace whale::exec::gpt {

Block::Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
             Communicator* tp, BlockScratch& scratch, WeightGradients& weight_gradients)
    : dims_(dims),
      channels_local_(dims.channels / tp_size),
      heads_local_(dims.heads / tp_size),
      ffn_local_(dims.ffn / tp_size),
      p_(params),
      be_(backend),
      tp_(tp_size > 1 ? tp : nullptr),
      scratch_(&scratch),
      act_(backend.compute_dtype()),
      tp_ops_(backend, tp_, weight_gradients) {}

void Block::tp_all_reduce(TensorView data) { tp_ops_.all_reduce(data); }

void Block::linear_gradients(TensorView dinp, const Param& w, TensorView dbias,
                             ConstTensorView dout, ConstTensorView inp, int rows,
                             int in_channels, int out_channels) {
  tp_ops_.linear_gradients(dinp, w, dbias, dout, inp, rows, in_channels, out_channels);
}

void Block::forward(int batch, ConstTensorView x_in, TensorView x_out, BlockActivations& a,
                    bool keep_probs) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  const int N = batch * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  reuse_or_allocate(a.ln1, be_, NC, act_);
  reuse_or_allocate(a.ln1_mean, be_, N, DType::fp32);
  reuse_or_allocate(a.ln1_rstd, be_, N, DType::fp32);
  be_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x_in,
                        p_.ln1_w.value, p_.ln1_b.value, N, C);
  reuse_or_allocate(a.qkv, be_, static_cast<std::size_t>(N) * 3 * Cl, act_);
  be_.linear_forward(a.qkv, a.ln1, p_.qkv_w.value, p_.qkv_b.value, N, C, 3 * Cl);
  reuse_or_allocate(a.atty, be_, static_cast<std::size_t>(N) * Cl, act_);
  Tensor& probs = keep_probs ? a.probs : scratch_->probs;
  reuse_or_allocate(probs, be_, static_cast<std::size_t>(batch) * heads_local_ * T * T, act_);
  be_.attention_forward(a.atty, probs, a.qkv, batch, T, heads_local_,
                        dims_.head_size());
  if (!keep_probs) a.probs.reset();  // backward recomputes them
  reuse_or_allocate(a.x_mid, be_, NC, act_);
  be_.linear_forward(a.x_mid, a.atty, p_.proj_w.value, TensorView{}, N, Cl, C);
  tp_all_reduce(a.x_mid);
  be_.bias_add_forward(a.x_mid, p_.proj_b.value, N, C);
  be_.add_forward(a.x_mid, a.x_mid, x_in, NC);

  reuse_or_allocate(a.ln2, be_, NC, act_);
  reuse_or_allocate(a.ln2_mean, be_, N, DType::fp32);
  reuse_or_allocate(a.ln2_rstd, be_, N, DType::fp32);
  be_.layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.x_mid,
                        p_.ln2_w.value, p_.ln2_b.value, N, C);
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;
  reuse_or_allocate(a.fc1, be_, NF, act_);
  be_.linear_forward(a.fc1, a.ln2, p_.fc1_w.value, p_.fc1_b.value, N, C, Fl);
  reuse_or_allocate(a.gelu, be_, NF, act_);
  be_.gelu_forward(a.gelu, a.fc1, NF);
  be_.linear_forward(x_out, a.gelu, p_.fc2_w.value, TensorView{}, N, Fl, C);
  tp_all_reduce(x_out);
  be_.bias_add_forward(x_out, p_.fc2_b.value, N, C);
  be_.add_forward(x_out, x_out, a.x_mid, NC);
}

void Block::backward(int batch, ConstTensorView x_in, ConstTensorView dx_out, TensorView dx_in,
                     const BlockActivations& a) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  const int N = batch * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;

  BlockScratch& g = *scratch_;
  for (Tensor* b : {&g.dgelu, &g.dfc1}) reuse_or_allocate(*b, be_, NF, act_);
  for (Tensor* b : {&g.dln2, &g.dx_mid, &g.dln1}) reuse_or_allocate(*b, be_, NC, act_);
  reuse_or_allocate(g.datty, be_, static_cast<std::size_t>(N) * Cl, act_);
  reuse_or_allocate(g.dqkv, be_, static_cast<std::size_t>(N) * 3 * Cl, act_);

  // MLP: x_out = x_mid + fc2(gelu(fc1(ln2(x_mid)))).
  linear_gradients(g.dgelu, p_.fc2_w, TensorView{}, dx_out, a.gelu, N, Fl, C);
  be_.bias_add_backward(p_.fc2_b.grad, dx_out, N, C);
  be_.fill_zero(g.dfc1, Stream::compute);
  be_.gelu_backward(g.dfc1, a.fc1, g.dgelu, NF);
  linear_gradients(g.dln2, p_.fc1_w, p_.fc1_b.grad, g.dfc1, a.ln2, N, C,
                   Fl);
  tp_all_reduce(g.dln2);
  be_.copy(g.dx_mid, dx_out, Stream::compute);  // the residual path
  be_.layernorm_backward(g.dx_mid, p_.ln2_w.grad, p_.ln2_b.grad, g.dln2,
                         a.x_mid, p_.ln2_w.value, a.ln2_mean, a.ln2_rstd,
                         N, C);

  // Attention: x_mid = x_in + proj(attention(qkv(ln1(x_in)))).
  linear_gradients(g.datty, p_.proj_w, TensorView{}, g.dx_mid, a.atty, N, Cl,
                   C);
  be_.bias_add_backward(p_.proj_b.grad, g.dx_mid, N, C);
  ConstTensorView probs = a.probs;
  if (a.probs.empty()) {  // selective recomputation: the same op on the same qkv
    reuse_or_allocate(g.probs, be_, static_cast<std::size_t>(batch) * heads_local_ * T * T, act_);
    reuse_or_allocate(g.atty, be_, static_cast<std::size_t>(N) * Cl, act_);
    be_.attention_forward(g.atty, g.probs, a.qkv, batch, T, heads_local_,
                          dims_.head_size());
    probs = g.probs;
  }
  be_.fill_zero(g.dqkv, Stream::compute);
  be_.attention_backward(g.dqkv, g.datty, a.qkv, probs, batch, T,
                         heads_local_, dims_.head_size());
  linear_gradients(g.dln1, p_.qkv_w, p_.qkv_b.grad, g.dqkv, a.ln1, N, C,
                   3 * Cl);
  tp_all_reduce(g.dln1);
  be_.copy(dx_in, g.dx_mid, Stream::compute);  // the residual path
  be_.layernorm_backward(dx_in, p_.ln1_w.grad, p_.ln1_b.grad, g.dln1, x_in,
                         p_.ln1_w.value, a.ln1_mean, a.ln1_rstd, N, C);
}

}  // namespace whale::exec::gpt

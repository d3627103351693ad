// File: gpt_block.cpp
// The transformer block: LN, QKV (column-split by heads), causal attention, proj (row-split)
// + all-reduce + bias + residual; LN, fc1 (column-split), GELU, fc2 (row-split) + all-reduce
// + bias + residual. Backward all-reduces the input gradients of the column-split matmuls.
#include "model/gpt_block.h"

namespace whale::exec::gpt {

Block::Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
             Communicator* tp, BlockScratch& scratch)
    : dims_(dims),
      channels_local_(dims.channels / tp_size),
      heads_local_(dims.heads / tp_size),
      ffn_local_(dims.ffn / tp_size),
      p_(params),
      be_(backend),
      tp_(tp_size > 1 ? tp : nullptr),
      scratch_(&scratch) {}

void Block::tp_all_reduce(float* data, std::size_t count) {
  if (tp_) tp_->all_reduce_sum(data, count);
}

void Block::linear_gradients(float* dinp, const Param& w, float* dbias, const float* dout,
                             const float* inp, int rows, int in_channels, int out_channels) {
  be_.matmul(false, false, rows, in_channels, out_channels, dout, w.value, dinp, false);
  be_.linear_backward(nullptr, w.grad, dbias, dout, inp, w.value, rows, in_channels,
                      out_channels);
}

void Block::forward(int batch, const float* x_in, float* x_out, BlockActivations& a,
                    bool keep_probs) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  const int N = batch * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  reuse_or_allocate(a.ln1, be_, NC);
  reuse_or_allocate(a.ln1_mean, be_, N);
  reuse_or_allocate(a.ln1_rstd, be_, N);
  be_.layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x_in,
                        p_.ln1_w.value, p_.ln1_b.value, N, C);
  reuse_or_allocate(a.qkv, be_, static_cast<std::size_t>(N) * 3 * Cl);
  be_.linear_forward(a.qkv.data(), a.ln1.data(), p_.qkv_w.value, p_.qkv_b.value, N, C, 3 * Cl);
  reuse_or_allocate(a.atty, be_, static_cast<std::size_t>(N) * Cl);
  Buffer& probs = keep_probs ? a.probs : scratch_->probs;
  reuse_or_allocate(probs, be_, static_cast<std::size_t>(batch) * heads_local_ * T * T);
  be_.attention_forward(a.atty.data(), probs.data(), a.qkv.data(), batch, T, heads_local_,
                        dims_.head_size());
  if (!keep_probs) a.probs.reset();  // backward recomputes them
  reuse_or_allocate(a.x_mid, be_, NC);
  be_.linear_forward(a.x_mid.data(), a.atty.data(), p_.proj_w.value, nullptr, N, Cl, C);
  tp_all_reduce(a.x_mid.data(), NC);
  be_.bias_add_forward(a.x_mid.data(), p_.proj_b.value, N, C);
  be_.add_forward(a.x_mid.data(), a.x_mid.data(), x_in, NC);

  reuse_or_allocate(a.ln2, be_, NC);
  reuse_or_allocate(a.ln2_mean, be_, N);
  reuse_or_allocate(a.ln2_rstd, be_, N);
  be_.layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.x_mid.data(),
                        p_.ln2_w.value, p_.ln2_b.value, N, C);
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;
  reuse_or_allocate(a.fc1, be_, NF);
  be_.linear_forward(a.fc1.data(), a.ln2.data(), p_.fc1_w.value, p_.fc1_b.value, N, C, Fl);
  reuse_or_allocate(a.gelu, be_, NF);
  be_.gelu_forward(a.gelu.data(), a.fc1.data(), NF);
  be_.linear_forward(x_out, a.gelu.data(), p_.fc2_w.value, nullptr, N, Fl, C);
  tp_all_reduce(x_out, NC);
  be_.bias_add_forward(x_out, p_.fc2_b.value, N, C);
  be_.add_forward(x_out, x_out, a.x_mid.data(), NC);
}

void Block::backward(int batch, const float* x_in, const float* dx_out, float* dx_in,
                     const BlockActivations& a) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  const int N = batch * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;

  BlockScratch& g = *scratch_;
  for (Buffer* b : {&g.dgelu, &g.dfc1}) reuse_or_allocate(*b, be_, NF);
  for (Buffer* b : {&g.dln2, &g.dx_mid, &g.dln1}) reuse_or_allocate(*b, be_, NC);
  reuse_or_allocate(g.datty, be_, static_cast<std::size_t>(N) * Cl);
  reuse_or_allocate(g.dqkv, be_, static_cast<std::size_t>(N) * 3 * Cl);

  // MLP: x_out = x_mid + fc2(gelu(fc1(ln2(x_mid)))).
  linear_gradients(g.dgelu.data(), p_.fc2_w, nullptr, dx_out, a.gelu.data(), N, Fl, C);
  be_.bias_add_backward(p_.fc2_b.grad, dx_out, N, C);
  be_.fill_zero(g.dfc1.data(), NF);
  be_.gelu_backward(g.dfc1.data(), a.fc1.data(), g.dgelu.data(), NF);
  linear_gradients(g.dln2.data(), p_.fc1_w, p_.fc1_b.grad, g.dfc1.data(), a.ln2.data(), N, C,
                   Fl);
  tp_all_reduce(g.dln2.data(), NC);
  be_.copy(g.dx_mid.data(), dx_out, NC);  // the residual path
  be_.layernorm_backward(g.dx_mid.data(), p_.ln2_w.grad, p_.ln2_b.grad, g.dln2.data(),
                         a.x_mid.data(), p_.ln2_w.value, a.ln2_mean.data(), a.ln2_rstd.data(),
                         N, C);

  // Attention: x_mid = x_in + proj(attention(qkv(ln1(x_in)))).
  linear_gradients(g.datty.data(), p_.proj_w, nullptr, g.dx_mid.data(), a.atty.data(), N, Cl,
                   C);
  be_.bias_add_backward(p_.proj_b.grad, g.dx_mid.data(), N, C);
  const float* probs = a.probs.data();
  if (a.probs.empty()) {  // selective recomputation: the same op on the same qkv
    reuse_or_allocate(g.probs, be_, static_cast<std::size_t>(batch) * heads_local_ * T * T);
    reuse_or_allocate(g.atty, be_, static_cast<std::size_t>(N) * Cl);
    be_.attention_forward(g.atty.data(), g.probs.data(), a.qkv.data(), batch, T, heads_local_,
                          dims_.head_size());
    probs = g.probs.data();
  }
  be_.fill_zero(g.dqkv.data(), g.dqkv.count());
  be_.attention_backward(g.dqkv.data(), g.datty.data(), a.qkv.data(), probs, batch, T,
                         heads_local_, dims_.head_size());
  linear_gradients(g.dln1.data(), p_.qkv_w, p_.qkv_b.grad, g.dqkv.data(), a.ln1.data(), N, C,
                   3 * Cl);
  tp_all_reduce(g.dln1.data(), NC);
  be_.copy(dx_in, g.dx_mid.data(), NC);  // the residual path
  be_.layernorm_backward(dx_in, p_.ln1_w.grad, p_.ln1_b.grad, g.dln1.data(), x_in,
                         p_.ln1_w.value, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
}

}  // namespace whale::exec::gpt

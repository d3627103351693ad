// File: gpt_block.cpp
// The transformer block: LN, QKV (column-split by heads), causal attention, proj (row-split)
// + all-reduce + bias + residual; LN, fc1 (column-split), GELU, fc2 (row-split) + all-reduce
// + bias + residual. Backward all-reduces the input gradients of the column-split matmuls.
#include "gpt_block.h"

namespace whale::exec::gpt {

Block::Block(const Dims& dims, int tp_size, const BlockParams& params, Backend& backend,
             Communicator* tp)
    : dims_(dims),
      channels_local_(dims.channels / tp_size),
      heads_local_(dims.heads / tp_size),
      ffn_local_(dims.ffn / tp_size),
      p_(params),
      be_(backend),
      tp_(tp_size > 1 ? tp : nullptr) {}

void Block::tp_all_reduce(float* data, std::size_t count) {
  if (tp_) tp_->all_reduce_sum(data, count);
}

void Block::forward(int batch, const float* x_in, float* x_out, BlockActivations& a,
                    bool keep_probs) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  const int N = batch * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  a.ln1 = Buffer(be_, NC);
  a.ln1_mean = Buffer(be_, N);
  a.ln1_rstd = Buffer(be_, N);
  be_.layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x_in,
                        p_.ln1_w.value, p_.ln1_b.value, N, C);
  a.qkv = Buffer(be_, static_cast<std::size_t>(N) * 3 * Cl);
  be_.linear_forward(a.qkv.data(), a.ln1.data(), p_.qkv_w.value, p_.qkv_b.value, N, C, 3 * Cl);
  a.atty = Buffer(be_, static_cast<std::size_t>(N) * Cl);
  Buffer probs(be_, static_cast<std::size_t>(batch) * heads_local_ * T * T);
  be_.attention_forward(a.atty.data(), probs.data(), a.qkv.data(), batch, T, heads_local_,
                        dims_.head_size());
  if (keep_probs) a.probs = std::move(probs);
  a.x_mid = Buffer(be_, NC);
  be_.linear_forward(a.x_mid.data(), a.atty.data(), p_.proj_w.value, nullptr, N, Cl, C);
  tp_all_reduce(a.x_mid.data(), NC);
  be_.bias_add_forward(a.x_mid.data(), p_.proj_b.value, N, C);
  be_.add_forward(a.x_mid.data(), a.x_mid.data(), x_in, NC);

  a.ln2 = Buffer(be_, NC);
  a.ln2_mean = Buffer(be_, N);
  a.ln2_rstd = Buffer(be_, N);
  be_.layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.x_mid.data(),
                        p_.ln2_w.value, p_.ln2_b.value, N, C);
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;
  a.fc1 = Buffer(be_, NF);
  be_.linear_forward(a.fc1.data(), a.ln2.data(), p_.fc1_w.value, p_.fc1_b.value, N, C, Fl);
  a.gelu = Buffer(be_, NF);
  be_.gelu_forward(a.gelu.data(), a.fc1.data(), NF);
  be_.linear_forward(x_out, a.gelu.data(), p_.fc2_w.value, nullptr, N, Fl, C);
  tp_all_reduce(x_out, NC);
  be_.bias_add_forward(x_out, p_.fc2_b.value, N, C);
  be_.add_forward(x_out, x_out, a.x_mid.data(), NC);
}

void Block::backward(int batch, const float* x_in, const float* dx_out, float* dx_in,
                     BlockActivations& a) {
  const int T = dims_.sequence, C = dims_.channels, Cl = channels_local_, Fl = ffn_local_;
  const int N = batch * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  const std::size_t NF = static_cast<std::size_t>(N) * Fl;

  // MLP: x_out = x_mid + fc2(gelu(fc1(ln2(x_mid)))).
  Buffer dgelu(be_, NF), dfc1(be_, NF), dln2(be_, NC), dx_mid(be_, NC);
  be_.linear_backward(dgelu.data(), p_.fc2_w.grad, nullptr, dx_out, a.gelu.data(),
                      p_.fc2_w.value, N, Fl, C);
  be_.bias_add_backward(p_.fc2_b.grad, dx_out, N, C);
  be_.gelu_backward(dfc1.data(), a.fc1.data(), dgelu.data(), NF);
  be_.linear_backward(dln2.data(), p_.fc1_w.grad, p_.fc1_b.grad, dfc1.data(), a.ln2.data(),
                      p_.fc1_w.value, N, C, Fl);
  tp_all_reduce(dln2.data(), NC);
  be_.add_backward(dx_mid.data(), nullptr, dx_out, NC);
  be_.layernorm_backward(dx_mid.data(), p_.ln2_w.grad, p_.ln2_b.grad, dln2.data(),
                         a.x_mid.data(), p_.ln2_w.value, a.ln2_mean.data(), a.ln2_rstd.data(),
                         N, C);

  // Attention: x_mid = x_in + proj(attention(qkv(ln1(x_in)))).
  Buffer datty(be_, static_cast<std::size_t>(N) * Cl);
  be_.linear_backward(datty.data(), p_.proj_w.grad, nullptr, dx_mid.data(), a.atty.data(),
                      p_.proj_w.value, N, Cl, C);
  be_.bias_add_backward(p_.proj_b.grad, dx_mid.data(), N, C);
  if (a.probs.empty()) {  // selective recomputation: the same op on the same qkv
    a.probs = Buffer(be_, static_cast<std::size_t>(batch) * heads_local_ * T * T);
    Buffer scratch(be_, static_cast<std::size_t>(N) * Cl);
    be_.attention_forward(scratch.data(), a.probs.data(), a.qkv.data(), batch, T, heads_local_,
                          dims_.head_size());
  }
  Buffer dqkv(be_, static_cast<std::size_t>(N) * 3 * Cl), dln1(be_, NC);
  be_.attention_backward(dqkv.data(), datty.data(), a.qkv.data(), a.probs.data(), batch, T,
                         heads_local_, dims_.head_size());
  be_.linear_backward(dln1.data(), p_.qkv_w.grad, p_.qkv_b.grad, dqkv.data(), a.ln1.data(),
                      p_.qkv_w.value, N, C, 3 * Cl);
  tp_all_reduce(dln1.data(), NC);
  be_.add_backward(dx_in, nullptr, dx_mid.data(), NC);
  be_.layernorm_backward(dx_in, p_.ln1_w.grad, p_.ln1_b.grad, dln1.data(), x_in,
                         p_.ln1_w.value, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
}

}  // namespace whale::exec::gpt

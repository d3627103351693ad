// File: moe_layer.cpp
// MoeLayer: router -> routing plan (host) -> dispatch -> [exchange] -> experts over their rows
// -> [exchange back] -> gated combine, plus the shared experts; backward the other way, with
// the auxiliary loss's gradient added at the router.
#include "model/moe_layer.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "model/moe_exchange.h"
#include "whale/plan/check.h"

namespace whale::exec {
namespace {

/// The rows the experts run (MoeActivations::gather_rows summed).
int run_rows(const MoeActivations& a) {
  return std::accumulate(a.gather_rows.begin(), a.gather_rows.end(), 0);
}

/// Runs `communicate` and adds its wall time to `seconds` (MoeContext::exchange_s).
template <class Communicate>
void timed(double& seconds, Communicate&& communicate) {
  const auto start = std::chrono::steady_clock::now();
  communicate();
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

MoeParams moe_params(const std::vector<Param>& p, std::size_t first, ExpertKind kind, int shared,
                     int routed, bool router_bias) {
  const std::size_t per = static_cast<std::size_t>(expert_parameter_count(kind));
  const std::size_t router = router_bias ? 2 : 1;
  WHALE_CHECK(p.size() == first + router + per * (shared + routed),
              "moe_params: " + std::to_string(p.size() - first) + " MoE parameters for " +
                  std::to_string(shared) + " shared and " + std::to_string(routed) + " routed experts");
  MoeParams m;
  m.router = p[first];
  if (router_bias) m.router_bias = p[first + 1];
  std::size_t i = first + router;
  auto expert = [&] {
    ExpertParams e;
    if (kind == ExpertKind::gelu) {
      e = {p[i], p[i + 1], Param{}, p[i + 2], p[i + 3]};
    } else {
      e = {p[i], Param{}, p[i + 1], p[i + 2], Param{}};
    }
    i += per;
    return e;
  };
  for (int s = 0; s < shared; ++s) m.shared.push_back(expert());
  for (int e = 0; e < routed; ++e) m.routed.push_back(expert());
  return m;
}

int routed_held(std::size_t moe_count, int shared, ExpertKind kind, bool router_bias) {
  const int per = expert_parameter_count(kind);
  return (static_cast<int>(moe_count) - (router_bias ? 2 : 1) - per * shared) / per;
}

MoeLayer::MoeLayer(int channels, const MoeParams& params, Backend& backend,
                   const MoeContext& context, MoeScratch& scratch, TensorParallelOps& ops)
    : channels_(channels),
      routed_ffn_(context.spec.expert_ffn_hidden / context.expert_tp_size),
      shared_ffn_(context.spec.expert_ffn_hidden / context.tp_size),
      p_(params),
      be_(backend),
      context_(&context),
      scratch_(&scratch),
      ops_(ops),
      act_(backend.compute_dtype()) {}

void MoeLayer::route(int rows, ConstTensorView x, MoeActivations& a) {
  const MoeContext& ctx = *context_;
  const int E = ctx.spec.experts, K = ctx.spec.top_k, C = channels_;
  const std::size_t N = static_cast<std::size_t>(rows);
  reuse_or_allocate(a.logits, be_, N * E, act_);
  reuse_or_allocate(a.probs, be_, N * E, DType::fp32);
  reuse_or_allocate(a.chosen, be_, N * K, DType::i32);
  reuse_or_allocate(a.gates, be_, N * K, DType::fp32);
  be_.linear_forward(a.logits, x, p_.router.value, ConstTensorView{}, rows, C, E);
  be_.moe_router_forward(ctx.spec.router, a.probs, a.chosen, a.gates, a.logits,
                         p_.router_bias.value, rows, E, K);
  std::vector<int32_t> chosen(N * K);
  be_.download(chosen.data(), a.chosen, Stream::compute);
  be_.synchronize(Stream::compute);
  a.routing = make_moe_routing(chosen, rows, K, E, ctx.spec.capacity_factor);
  if (ctx.token_slices() > 1) {  // the folded layout: this rank sends its slice's rows alone
    const int slices = ctx.token_slices(), slice = ctx.token_slice();
    a.routing = keep_token_rows(a.routing, rows * slice / slices, rows * (slice + 1) / slices);
  }
  reuse_or_allocate(a.slot_rows, be_, N * K, DType::i32);
  be_.upload(a.slot_rows, a.routing.slot_rows.data(), Stream::compute);
  const int M = a.routing.routed_rows();
  reuse_or_allocate(a.source_rows, be_, std::max(M, 1), DType::i32);
  if (M > 0) be_.upload(a.source_rows.slice(0, M), a.routing.source_rows.data(), Stream::compute);
  be_.synchronize(Stream::compute);  // the host vectors may change after

  // Rows to each member (its experts' rows, in expert order) and from each member.
  WHALE_CHECK(ctx.owners.members() == ctx.ep_size && ctx.owners.first(ctx.ep_size) == E,
              "MoeLayer: the context's expert ownership (" + std::to_string(ctx.owners.members()) +
                  " members) does not split " + std::to_string(E) + " experts over ep " +
                  std::to_string(ctx.ep_size));
  const int members = ctx.ep_size, local = ctx.local_experts();
  a.send_rows.assign(members, 0);
  for (int e = 0; e < E; ++e) a.send_rows[ctx.owners.owner(e)] += a.routing.expert_rows[e];
  std::vector<int> incoming = a.routing.expert_rows;  // [q * local + l]: member q's rows of l
  if (members > 1) {
    timed(ctx.exchange_s, [&] {
      incoming = exchange_counts(be_, *ctx.ep, a.routing.expert_rows, ctx.owners.counts());
    });
  }
  a.recv_rows.assign(members, 0);
  for (int q = 0; q < members; ++q)
    for (int l = 0; l < local; ++l) a.recv_rows[q] += incoming[q * local + l];
  // The experts run this member's rows, or every gather member's: their counts, in member order.
  std::vector<int> run = incoming;
  if (ctx.expert_gather != nullptr) {
    const int gathered = ctx.expert_gather->size();
    std::vector<int> repeated;
    for (int j = 0; j < gathered; ++j) repeated.insert(repeated.end(), incoming.begin(), incoming.end());
    timed(ctx.exchange_s, [&] {
      run = exchange_counts(be_, *ctx.expert_gather, repeated,
                            std::vector<int>(gathered, static_cast<int>(incoming.size())));
    });
  }
  const std::size_t per_member = incoming.size();
  a.gather_rows.assign(ctx.expert_gather != nullptr ? ctx.expert_gather->size() : 1, 0);
  a.segment_expert.clear();
  a.segment_rows.clear();
  for (std::size_t i = 0; i < run.size(); ++i) {
    a.gather_rows[i / per_member] += run[i];
    if (run[i] == 0) continue;
    a.segment_expert.push_back(static_cast<int>(i % per_member) % local);
    a.segment_rows.push_back(run[i]);
  }
}

void MoeLayer::exchange(ConstTensorView from, const std::vector<int>& send, TensorView to,
                        const std::vector<int>& recv, Communicator* group) {
  timed(context_->exchange_s, [&] {
    exchange_rows(be_, group != nullptr ? *group : *context_->ep, from, send, to, recv, channels_);
  });
}

void MoeLayer::gather(ConstTensorView mine, TensorView all, const std::vector<int>& rows_of) {
  timed(context_->exchange_s,
        [&] { gather_rows(be_, *context_->expert_gather, mine, all, rows_of, channels_); });
}

ConstTensorView MoeLayer::rows_for_experts(ConstTensorView mine, Tensor& all,
                                           const MoeActivations& a) {
  if (context_->expert_gather == nullptr) return mine;
  reuse_or_allocate(all, be_, std::max(run_rows(a), 1) * static_cast<std::size_t>(channels_), act_);
  gather(mine, all, a.gather_rows);
  return all;
}

TensorView MoeLayer::experts_output(TensorView mine, const MoeActivations& a) {
  if (context_->expert_gather == nullptr) return mine;
  reuse_or_allocate(scratch_->partial, be_, std::max(run_rows(a), 1) * static_cast<std::size_t>(channels_),
                    act_);
  return scratch_->partial;
}

void MoeLayer::sum_partials(ConstTensorView partial, const std::vector<int>& rows_of,
                            TensorView mine) {
  Communicator& group = *context_->expert_gather;
  const int members = group.size(), rows = rows_of.at(group.rank());
  const std::size_t count = static_cast<std::size_t>(rows) * channels_;
  reuse_or_allocate(scratch_->parts, be_, std::max<std::size_t>(count * members, 1), act_);
  exchange(partial, rows_of, scratch_->parts, std::vector<int>(members, rows), &group);
  be_.copy(mine.slice(0, count), ConstTensorView(scratch_->parts).slice(0, count), Stream::compute);
  for (int j = 1; j < members; ++j)
    be_.add_forward(mine, mine, ConstTensorView(scratch_->parts).slice(j * count, count), count);
}

void MoeLayer::forward(int rows, ConstTensorView x_held, TensorView out_held,
                       MoeActivations& a) {
  const MoeContext& ctx = *context_;
  const int C = channels_, F = routed_ffn_, K = ctx.spec.top_k;
  const std::size_t N = static_cast<std::size_t>(rows);
  MoeScratch& g = *scratch_;
  TensorParallelRegion& region = ops_.region();
  const std::size_t held_count = static_cast<std::size_t>(region.held_rows(rows)) * C;
  const ConstTensorView x = region.enter(x_held.slice(0, held_count), g.x_all);  // all N rows
  const TensorView out = region.all_rows(out_held.slice(0, held_count), g.out_all, N * C);
  route(rows, x, a);
  const int M = a.routing.routed_rows();
  int R = 0;
  for (int n : a.recv_rows) R += n;
  const bool parallel = ctx.ep_size > 1;
  // At least one row each, so that every view is a real one.
  reuse_or_allocate(a.expert_in, be_, std::max(R, 1) * static_cast<std::size_t>(C), act_);
  reuse_or_allocate(a.expert_out, be_, std::max(R, 1) * static_cast<std::size_t>(C), act_);
  if (parallel) {
    reuse_or_allocate(g.routed_in, be_, std::max(M, 1) * static_cast<std::size_t>(C), act_);
    if (M > 0) be_.moe_dispatch_forward(g.routed_in, x, a.source_rows, M, C);
    exchange(g.routed_in, a.send_rows, a.expert_in, a.recv_rows);
  } else if (M > 0) {
    be_.moe_dispatch_forward(a.expert_in, x, a.source_rows, M, C);
  }
  // The experts run this member's rows, or with expert_gather every gather member's.
  const ConstTensorView experts_in = rows_for_experts(a.expert_in, a.gathered_in, a);
  const TensorView experts_out = experts_output(a.expert_out, a);
  for (Tensor* t : {&a.routed.h1, &a.routed.h3, &a.routed.act})
    reuse_or_allocate(*t, be_, std::max(run_rows(a), 1) * static_cast<std::size_t>(F), act_);
  std::size_t at = 0;
  for (std::size_t s = 0; s < a.segment_expert.size(); ++s) {
    expert_forward(p_.routed[a.segment_expert[s]], F, ctx.expert_tp_rank == 0, experts_in,
                   a.segment_rows[s], a.routed, at, experts_out);
    at += a.segment_rows[s];
  }
  if (ctx.expert_gather != nullptr) sum_partials(g.partial, a.gather_rows, a.expert_out);
  ConstTensorView routed_out = a.expert_out;
  if (parallel) {
    reuse_or_allocate(a.routed_out, be_, std::max(M, 1) * static_cast<std::size_t>(C), act_);
    exchange(a.expert_out, a.recv_rows, a.routed_out, a.send_rows);
    routed_out = a.routed_out;
  }
  be_.fill_zero(out.slice(0, N * C), Stream::compute);
  a.shared.resize(p_.shared.size());
  for (std::size_t s = 0; s < p_.shared.size(); ++s) {
    for (Tensor* t : {&a.shared[s].h1, &a.shared[s].h3, &a.shared[s].act})
      reuse_or_allocate(*t, be_, N * shared_ffn_, act_);
    reuse_or_allocate(g.shared_out, be_, N * C, act_);
    expert_forward(p_.shared[s], shared_ffn_, ctx.tp_rank == 0, x, rows, a.shared[s], 0,
                   g.shared_out);
    be_.add_forward(out, out, g.shared_out, N * C);
  }
  if (M > 0) be_.moe_combine_forward(out, routed_out, a.gates, a.slot_rows, rows, K, C);
  // Tensor parallelism: every expert output so far is this rank's partial sum (the row-parallel
  // fc2 or down; fc2.bias added by one rank), or under folding its slice's rows alone (zero
  // elsewhere), and the combine is linear: one all-reduce over the tensor group.
  // Under sequence parallelism a reduce-scatter to the held rows.
  if (ctx.tp_size > 1) region.leave(out.slice(0, N * C), out_held.slice(0, held_count));
}

void MoeLayer::backward(int rows, ConstTensorView x_held, ConstTensorView dout_held,
                        TensorView dx_held, const MoeActivations& a) {
  const MoeContext& ctx = *context_;
  const int C = channels_, E = ctx.spec.experts, K = ctx.spec.top_k;
  const std::size_t N = static_cast<std::size_t>(rows);
  const int M = a.routing.routed_rows();
  int R = 0;
  for (int n : a.recv_rows) R += n;
  const bool parallel = ctx.ep_size > 1;
  MoeScratch& g = *scratch_;
  TensorParallelRegion& region = ops_.region();
  const std::size_t held_count = static_cast<std::size_t>(region.held_rows(rows)) * C;
  const ConstTensorView x = region.enter(x_held.slice(0, held_count), g.x_all);  // as forward
  const ConstTensorView dout = region.enter(dout_held.slice(0, held_count), g.dout_all);
  const TensorView dx = region.all_rows(dx_held.slice(0, held_count), g.dx_all, N * C);
  const std::size_t MC = std::max(M, 1) * static_cast<std::size_t>(C);
  const std::size_t RC = std::max(R, 1) * static_cast<std::size_t>(C);
  reuse_or_allocate(g.dgates, be_, N * K, DType::fp32);
  be_.fill_zero(g.dgates, Stream::compute);
  reuse_or_allocate(g.d_routed, be_, MC, act_);
  be_.fill_zero(g.d_routed, Stream::compute);
  const ConstTensorView routed_out = parallel ? ConstTensorView(a.routed_out) : a.expert_out;
  if (M > 0)
    be_.moe_combine_backward(g.d_routed, g.dgates, dout, routed_out, a.gates, a.slot_rows, rows,
                             K, C);
  ConstTensorView d_expert_out = g.d_routed;
  if (parallel) {
    reuse_or_allocate(g.d_expert_out, be_, RC, act_);
    exchange(g.d_routed, a.send_rows, g.d_expert_out, a.recv_rows);
    d_expert_out = g.d_expert_out;
  }
  reuse_or_allocate(g.d_expert_in, be_, RC, act_);
  // As forward: over the gather group's rows with expert_gather, their input gradients summed back.
  const bool gathered = ctx.expert_gather != nullptr;
  const ConstTensorView experts_in = gathered ? ConstTensorView(a.gathered_in) : a.expert_in;
  d_expert_out = rows_for_experts(d_expert_out, g.d_gathered_out, a);
  const TensorView d_experts_in = experts_output(g.d_expert_in, a);
  const std::size_t scratch_rows = std::max<std::size_t>(std::max(run_rows(a), 1), N);
  for (Tensor* t : {&g.dh1, &g.dh3, &g.dact})
    reuse_or_allocate(*t, be_, scratch_rows * std::max(routed_ffn_, shared_ffn_), act_);
  std::size_t at = 0;
  for (std::size_t s = 0; s < a.segment_expert.size(); ++s) {
    expert_backward(p_.routed[a.segment_expert[s]], routed_ffn_, experts_in, a.segment_rows[s],
                    a.routed, at, d_expert_out, d_experts_in);
    at += a.segment_rows[s];
  }
  if (gathered) sum_partials(g.partial, a.gather_rows, g.d_expert_in);
  ConstTensorView d_routed_in = g.d_expert_in;
  if (parallel) {
    reuse_or_allocate(g.d_routed_in, be_, MC, act_);
    exchange(g.d_expert_in, a.recv_rows, g.d_routed_in, a.send_rows);
    d_routed_in = g.d_routed_in;
  }
  be_.fill_zero(dx.slice(0, N * C), Stream::compute);
  if (M > 0) be_.moe_dispatch_backward(dx, d_routed_in, a.slot_rows, rows, K, C);
  for (std::size_t s = 0; s < p_.shared.size(); ++s) {
    reuse_or_allocate(g.dshared, be_, N * C, act_);
    expert_backward(p_.shared[s], shared_ffn_, x, rows, a.shared[s], 0, dout, g.dshared);
    be_.add_forward(dx, dx, g.dshared, N * C);
  }
  if (ctx.tp_size > 1) {  // the column-parallel inputs' and the gates' partial sums (or slices)
    region.leave(dx.slice(0, N * C), dx_held.slice(0, held_count));  // reduce-scatter under SP
    region.all_reduce(g.dgates.slice(0, N * K));
  }
  // The auxiliary loss, counted as coeff * E * sum_e f_e P_e per token of the micro-batch
  // (its summed-loss share, like the cross-entropy's): d / d probs[n, e] = coeff * E * f_e.
  std::vector<float> aux(E, 0.0f);
  for (int e = 0; e < E; ++e)
    aux[e] = static_cast<float>(ctx.loss_scale * ctx.spec.aux_loss_coeff * E *
                                a.routing.load_fraction(e));
  reuse_or_allocate(g.aux_dprobs, be_, E, DType::fp32);
  be_.upload(g.aux_dprobs, aux.data(), Stream::compute);
  reuse_or_allocate(g.dlogits, be_, N * E, act_);
  be_.fill_zero(g.dlogits, Stream::compute);
  be_.moe_router_backward(ctx.spec.router, g.dlogits, a.probs, a.chosen, a.gates, g.dgates,
                          g.aux_dprobs, rows, E, K);
  // sigmoid_bias: the step's loads, counted here (once per micro-batch) rather than in the
  // forward, which a recomputation repeats.
  if (ctx.spec.router == plan::MoeRouter::sigmoid_bias) {
    std::vector<double>& loads = ctx.step_loads[p_.router_bias.value.data];
    loads.resize(E, 0.0);
    for (int e = 0; e < E; ++e) loads[e] += a.routing.expert_choices[e];
  }
  // The router's input gradient is whole on every rank: added to the held rows alone.
  const bool split_rows = region.sequence_parallel() && ctx.tp_size > 1;
  TensorView router_dx = dx;
  if (split_rows) {
    reuse_or_allocate(g.router_dx, be_, N * C, act_);
    router_dx = g.router_dx;
    be_.fill_zero(router_dx, Stream::compute);
  }
  ops_.linear_gradients(router_dx, p_.router, TensorView{}, g.dlogits, x, rows, C, E, true);
  if (split_rows) {
    const TensorView mine = dx_held.slice(0, held_count);  // rows [r N / tp, (r + 1) N / tp)
    be_.add_forward(mine, mine,
                    ConstTensorView(router_dx).slice(static_cast<std::size_t>(ctx.tp_rank) * held_count,
                                                     held_count),
                    held_count);
  }
  be_.synchronize(Stream::compute);  // `aux` (host) was uploaded from
}

void MoeLayer::expert_forward(const ExpertParams& p, int width, bool bias_owner,
                              ConstTensorView x, int rows, ExpertActivations& a, std::size_t at,
                              TensorView y) {
  const int C = channels_, F = width;
  const std::size_t RF = static_cast<std::size_t>(rows) * F, RC = static_cast<std::size_t>(rows) * C;
  const ConstTensorView xs = x.slice(at * C, RC);
  const TensorView h1 = a.h1.slice(at * F, RF), act = a.act.slice(at * F, RF);
  be_.linear_forward(h1, xs, p.w1.value, p.b1.value, rows, C, F);
  if (p.w3.value.empty()) {
    be_.gelu_forward(act, h1, RF);
  } else {
    const TensorView h3 = a.h3.slice(at * F, RF);
    be_.linear_forward(h3, xs, p.w3.value, ConstTensorView{}, rows, C, F);
    be_.swiglu_forward(act, h1, h3, RF);
  }
  const ConstTensorView bias = bias_owner ? p.b2.value : ConstTensorView{};
  be_.linear_forward(y.slice(at * C, RC), act, p.w2.value, bias, rows, F, C);
}

void MoeLayer::expert_backward(const ExpertParams& p, int width, ConstTensorView x, int rows,
                               const ExpertActivations& a, std::size_t at, ConstTensorView dy,
                               TensorView dx) {
  const int C = channels_, F = width;
  const std::size_t RF = static_cast<std::size_t>(rows) * F, RC = static_cast<std::size_t>(rows) * C;
  MoeScratch& g = *scratch_;
  const ConstTensorView xs = x.slice(at * C, RC);
  const TensorView dxs = dx.slice(at * C, RC);
  const TensorView dact = g.dact.slice(0, RF), dh1 = g.dh1.slice(0, RF);
  ops_.linear_gradients(dact, p.w2, p.b2.grad, dy.slice(at * C, RC),
                         ConstTensorView(a.act).slice(at * F, RF), rows, F, C);
  be_.fill_zero(dh1, Stream::compute);
  const ConstTensorView h1 = ConstTensorView(a.h1).slice(at * F, RF);
  if (p.w3.value.empty()) {
    be_.gelu_backward(dh1, h1, dact, RF);
    ops_.linear_gradients(dxs, p.w1, p.b1.grad, dh1, xs, rows, C, F);
    return;
  }
  const TensorView dh3 = g.dh3.slice(0, RF);
  be_.fill_zero(dh3, Stream::compute);
  be_.swiglu_backward(dh1, dh3, h1, ConstTensorView(a.h3).slice(at * F, RF), dact, RF);
  ops_.linear_gradients(dxs, p.w1, TensorView{}, dh1, xs, rows, C, F);
  ops_.linear_gradients(dxs, p.w3, TensorView{}, dh3, xs, rows, C, F, true);
}

}  // namespace whale::exec

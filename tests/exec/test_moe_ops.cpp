// File: test_moe_ops.cpp
// The mixture-of-experts ops of the CPU backend and the MoE layer: exact router, routing-plan
// and combine values on hand-checkable cases; the router's backward and the auxiliary loss's
// gradient against central finite differences; the whole MoE layer (GELU and SwiGLU experts,
// a shared expert, capacity dropping) against finite differences of its loss.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "finite_differences.h"
#include "host_views.h"
#include "model/moe_layer.h"
#include "model/moe_routing.h"
#include "model/tensor_parallel_region.h"
#include "model/weight_gradients.h"
#include "whale/exec/backend/backend.h"

using namespace whale::exec;
using whale::exec::test::gradient_error;
using whale::exec::test::host_view;
using whale::exec::test::random_vector;
using whale::exec::test::make_cpu_backend;
using whale::plan::MoeRouter;

namespace {

TensorView view(std::vector<float>& v) { return host_view(v); }
TensorView view(std::vector<int32_t>& v) { return {v.data(), v.size(), DType::i32}; }

}  // namespace

TEST_CASE("moe_router_forward: top-k by logit, ties to the lower expert, gates softmax of the chosen") {
  auto be = make_cpu_backend();
  std::vector<float> logits = {1, 3, 3, 0,    // a tie: experts 1 and 2, 1 first
                               2, 0, 1, -1};  // experts 0 and 2
  std::vector<float> probs(8), gates(4);
  std::vector<int32_t> chosen(4);
  be->moe_router_forward(MoeRouter::softmax_topk, view(probs), view(chosen), view(gates), host_view(logits),
                         {}, 2, 4, 2);
  CHECK(chosen == std::vector<int32_t>{1, 2, 0, 2});
  CHECK(gates[0] == doctest::Approx(0.5));
  CHECK(gates[1] == doctest::Approx(0.5));
  const double e = std::exp(1.0);
  CHECK(gates[2] == doctest::Approx(e / (e + 1)));
  CHECK(gates[3] == doctest::Approx(1 / (e + 1)));
  const double sum0 = std::exp(1.0) + 2 * std::exp(3.0) + 1;
  CHECK(probs[1] == doctest::Approx(std::exp(3.0) / sum0));
  CHECK(probs[3] == doctest::Approx(1 / sum0));
}

TEST_CASE("make_moe_routing: capacity drops later choices of a full expert, rows grouped by expert") {
  // Tokens' choices (top 2 of 4): [0,1] [0,2] [0,1] [3,0]; capacity ceil(1.0 * 8 / 4) = 2.
  const std::vector<int32_t> chosen = {0, 1, 0, 2, 0, 1, 3, 0};
  const MoeRoutingPlan plan = make_moe_routing(chosen, 4, 2, 4, 1.0);
  CHECK(plan.capacity == 2);
  CHECK(plan.expert_rows == std::vector<int>{2, 2, 1, 1});
  CHECK(plan.slot_rows == std::vector<int32_t>{0, 2, 1, 4, -1, 3, 5, -1});
  CHECK(plan.source_rows == std::vector<int32_t>{0, 1, 0, 2, 1, 3});
  CHECK(plan.load_fraction(0) == 0.5);
  CHECK(plan.load_fraction(1) == 0.25);
  CHECK(plan.load_fraction(3) == 0.125);
  CHECK(plan.expert_choices == std::vector<int>{4, 2, 1, 1});
  const MoeRoutingPlan dropless = make_moe_routing(chosen, 4, 2, 4, 0.0);
  CHECK(dropless.capacity == 8);
  CHECK(dropless.expert_rows == std::vector<int>{4, 2, 1, 1});
  CHECK(dropless.source_rows == std::vector<int32_t>{0, 1, 2, 3, 0, 2, 1, 3});

  // Tokens 2 and 3 alone (the second slice of a folded layout's two): their kept rows, renumbered
  // in the plan's order; the loads stay the whole plan's.
  const MoeRoutingPlan tail = keep_token_rows(plan, 2, 4);
  CHECK(tail.source_rows == std::vector<int32_t>{2, 3});
  CHECK(tail.expert_rows == std::vector<int>{0, 1, 0, 1});
  CHECK(tail.slot_rows == std::vector<int32_t>{-1, -1, -1, -1, -1, 0, 1, -1});
  CHECK(tail.expert_choices == plan.expert_choices);
  CHECK(tail.load_fraction(0) == 0.5);
  const MoeRoutingPlan head = keep_token_rows(plan, 0, 2);
  CHECK(head.source_rows == std::vector<int32_t>{0, 1, 0, 1});
  CHECK(head.slot_rows == std::vector<int32_t>{0, 2, 1, 3, -1, -1, -1, -1});
  CHECK(keep_token_rows(plan, 0, 4).slot_rows == plan.slot_rows);
}

TEST_CASE("moe_combine and moe_dispatch: gated sums over kept slots, and their backward") {
  auto be = make_cpu_backend();
  // 2 tokens, top 2, 2 channels; routed rows: token 0 -> rows 0 and 2, token 1 -> row 1 and dropped.
  std::vector<int32_t> slots = {0, 2, 1, -1}, source = {0, 1, 0};
  std::vector<float> x = {1, 2, 3, 4}, routed(6);
  be->moe_dispatch_forward(view(routed), host_view(x), view(source), 3, 2);
  CHECK(routed == std::vector<float>{1, 2, 3, 4, 1, 2});
  std::vector<float> y = {10, 20, 30, 40, 50, 60}, gates = {0.25f, 0.75f, 0.5f, 0.5f};
  std::vector<float> out = {1, 1, 1, 1};
  be->moe_combine_forward(view(out), host_view(y), host_view(gates), view(slots), 2, 2, 2);
  CHECK(out == std::vector<float>{1 + 2.5f + 37.5f, 1 + 5 + 45, 1 + 15, 1 + 20});
  std::vector<float> dout = {1, 2, 3, 4}, dy(6, 0.0f), dgates(4, 0.0f);
  be->moe_combine_backward(view(dy), view(dgates), host_view(dout), host_view(y), host_view(gates),
                           view(slots), 2, 2, 2);
  CHECK(dy == std::vector<float>{0.25f, 0.5f, 1.5f, 2, 0.75f, 1.5f});
  CHECK(dgates == std::vector<float>{10 + 40, 50 + 120, 90 + 160, 0});
  std::vector<float> dx(4, 0.0f);
  be->moe_dispatch_backward(view(dx), host_view(routed), view(slots), 2, 2, 2);
  CHECK(dx == std::vector<float>{1 + 1, 2 + 2, 3, 4});
}

namespace {

/// The router's backward against central finite differences of the loss through the gates and
/// the auxiliary loss's probabilities (softmax_topk: the softmax; sigmoid_bias: the scores over
/// their sum), the choice held fixed (a bias steering it away from the plain top-k).
void check_router_gradient(MoeRouter router) {
  auto be = make_cpu_backend();
  const int N = 5, E = 6, K = 2;
  // Distinct logits (gaps >= 0.1) so that no perturbation changes the choice.
  std::vector<float> logits(N * E);
  std::mt19937 rng(3);
  for (int n = 0; n < N; ++n) {
    std::vector<int> order = {0, 1, 2, 3, 4, 5};
    std::shuffle(order.begin(), order.end(), rng);
    for (int e = 0; e < E; ++e) logits[n * E + e] = 0.3f * order[e] - 0.7f;
  }
  const std::vector<float> weights = random_vector(N * K, 5, 1.0f);
  const double coeff = 0.01;
  std::vector<float> bias = {0.5f, -0.4f, 0.0f, 0.2f, -0.1f, 0.3f};
  // P_e per row: the softmax, or the sigmoid scores normalized to 1.
  auto aux_probabilities = [&](std::vector<float> p) {
    if (router == MoeRouter::sigmoid_bias)
      for (int n = 0; n < N; ++n) {
        double sum = 0;
        for (int e = 0; e < E; ++e) sum += p[n * E + e];
        for (int e = 0; e < E; ++e) p[n * E + e] = static_cast<float>(p[n * E + e] / sum);
      }
    return p;
  };
  std::vector<float> probs(N * E), gates(N * K);
  std::vector<int32_t> chosen(N * K);
  be->moe_router_forward(router, view(probs), view(chosen), view(gates), host_view(logits),
                         host_view(bias), N, E, K);
  // The Switch Transformer's loss as the layer counts it per token: N * coeff * E * sum_e f_e
  // P_e, with f_e (the routing's load fractions) constant.
  const MoeRoutingPlan routing = make_moe_routing(chosen, N, K, E, 0.0);
  std::vector<float> aux(E);
  for (int e = 0; e < E; ++e) aux[e] = static_cast<float>(coeff * E * routing.load_fraction(e));
  auto loss = [&] {
    std::vector<float> p(N * E), g(N * K);
    std::vector<int32_t> c(N * K);
    be->moe_router_forward(router, view(p), view(c), view(g), host_view(logits), host_view(bias), N,
                           E, K);
    p = aux_probabilities(p);
    REQUIRE(c == chosen);
    double total = 0;
    for (int i = 0; i < N * K; ++i) total += static_cast<double>(weights[i]) * g[i];
    for (int n = 0; n < N; ++n)
      for (int e = 0; e < E; ++e) total += static_cast<double>(aux[e]) * p[n * E + e];
    return total;
  };
  std::vector<float> dlogits(N * E, 0.0f);
  be->moe_router_backward(router, view(dlogits), host_view(probs), view(chosen), host_view(gates),
                          host_view(weights), host_view(aux), N, E, K);
  CHECK(gradient_error(logits, loss, dlogits, 1e-2f) < 1e-3);

  // The auxiliary loss alone (no gate gradient) has its own, nonzero gradient.
  std::vector<float> no_gates(N * K, 0.0f), aux_only(N * E, 0.0f);
  be->moe_router_backward(router, view(aux_only), host_view(probs), view(chosen), host_view(gates),
                          host_view(no_gates), host_view(aux), N, E, K);
  auto aux_loss = [&] {
    std::vector<float> p(N * E), g(N * K);
    std::vector<int32_t> c(N * K);
    be->moe_router_forward(router, view(p), view(c), view(g), host_view(logits), host_view(bias), N,
                           E, K);
    p = aux_probabilities(p);
    double total = 0;
    for (int n = 0; n < N; ++n)
      for (int e = 0; e < E; ++e) total += static_cast<double>(aux[e]) * p[n * E + e];
    return total;
  };
  CHECK(gradient_error(logits, aux_loss, aux_only, 1e-2f) < 1e-3);
}

}  // namespace

TEST_CASE("moe_router_backward: softmax_topk's gates and auxiliary loss match finite differences") {
  check_router_gradient(MoeRouter::softmax_topk);
}

TEST_CASE("moe_router_backward: sigmoid_bias's gates and auxiliary loss match finite differences") {
  check_router_gradient(MoeRouter::sigmoid_bias);
}

TEST_CASE("moe_router_forward sigmoid_bias: the bias steers the choice, the gates are the chosen scores normalized") {
  auto be = make_cpu_backend();
  std::vector<float> logits = {2, 1, 0, -1,   // plain top-2: experts 0 and 1
                               0, 0, 0, 0};   // a tie everywhere: the bias decides
  std::vector<float> bias = {0, 0, 0.9f, 0}, scores(8), gates(4);
  std::vector<int32_t> chosen(4);
  be->moe_router_forward(MoeRouter::sigmoid_bias, view(scores), view(chosen), view(gates),
                         host_view(logits), host_view(bias), 2, 4, 2);
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  // Row 0: scores + bias = 0.881, 0.731, 0.5 + 0.9, 0.269: experts 2 then 0.
  CHECK(chosen == std::vector<int32_t>{2, 0, 2, 0});
  CHECK(scores[0] == doctest::Approx(sigmoid(2)));
  CHECK(scores[2] == doctest::Approx(0.5));
  CHECK(gates[0] == doctest::Approx(0.5 / (0.5 + sigmoid(2))));  // the score, not score + bias
  CHECK(gates[1] == doctest::Approx(sigmoid(2) / (0.5 + sigmoid(2))));
  CHECK(gates[2] == doctest::Approx(0.5));
  CHECK(gates[3] == doctest::Approx(0.5));
}

namespace {

/// An MoE layer over host parameters: its loss sum(w * out) plus the auxiliary loss counted
/// per token, and the gradients of x and of every parameter.
struct LayerCase {
  static constexpr int N = 6, C = 8, F = 5;
  whale::plan::MoeSpec spec;
  ExpertKind kind;
  std::vector<std::vector<float>> values, grads;  // router, then each expert's tensors
  std::vector<float> x, w;
  std::unique_ptr<Backend> be = make_cpu_backend();

  LayerCase(ExpertKind k, double capacity_factor) : kind(k) {
    spec.experts = 4;
    spec.top_k = 2;
    spec.shared_experts = 1;
    spec.expert_ffn_hidden = F;
    spec.capacity_factor = capacity_factor;
    spec.aux_loss_coeff = 0.05;
    unsigned seed = 11;
    values.push_back(random_vector(static_cast<std::size_t>(spec.experts) * C, seed++, 0.8f));
    for (int e = 0; e < spec.shared_experts + spec.experts; ++e) {
      if (kind == ExpertKind::gelu) {
        for (std::size_t n : {F * C, F, C * F, C})
          values.push_back(random_vector(n, seed++, 0.5f));
      } else {
        for (std::size_t n : {F * C, F * C, C * F}) values.push_back(random_vector(n, seed++, 0.5f));
      }
    }
    x = random_vector(N * C, 101, 1.0f);
    w = random_vector(N * C, 102, 1.0f);
  }

  /// Runs forward (and backward when `backward`), returning the loss; grads hold the
  /// parameter gradients afterwards, dx the input's.
  double run(bool backward, std::vector<float>* dx) {
    grads.clear();
    std::vector<Param> params;
    for (auto& v : values) {
      grads.emplace_back(v.size(), 0.0f);
      params.push_back({host_view(v), host_view(grads.back())});
    }
    const int routed = spec.experts, shared = spec.shared_experts;
    const MoeParams p = moe_params(params, 0, kind, shared, routed);
    TensorParallelRegion region(*be, nullptr, false);
    WeightGradients weight_gradients(*be);
    TensorParallelOps ops(*be, region, weight_gradients);
    MoeContext context;
    context.spec = spec;
    context.kind = kind;
    context.owners = whale::plan::ExpertOwnership(spec.experts);  // one member holds every expert
    MoeScratch scratch;
    MoeActivations acts;
    MoeLayer layer(C, p, *be, context, scratch, ops);
    std::vector<float> out(N * C);
    layer.forward(N, host_view(x), host_view(out), acts);
    double loss = 0;
    for (int i = 0; i < N * C; ++i) loss += static_cast<double>(w[i]) * out[i];
    const std::vector<float> probs = test::host_floats(*be, acts.probs);
    for (int n = 0; n < N; ++n)
      for (int e = 0; e < spec.experts; ++e)
        loss += spec.aux_loss_coeff * spec.experts * acts.routing.load_fraction(e) *
                probs[n * spec.experts + e];
    if (backward) layer.backward(N, host_view(x), host_view(w), host_view(*dx), acts);
    return loss;
  }
};

void check_layer(ExpertKind kind, double capacity_factor) {
  LayerCase c(kind, capacity_factor);
  std::vector<float> dx(LayerCase::N * LayerCase::C);
  c.run(true, &dx);
  const std::vector<std::vector<float>> analytic = c.grads;
  std::vector<float> scratch;
  auto loss = [&] { return c.run(false, &scratch); };
  CHECK(gradient_error(c.x, loss, dx, 5e-3f) < 2e-3);
  for (std::size_t t = 0; t < c.values.size(); ++t) {
    CAPTURE(t);
    CHECK(gradient_error(c.values[t], loss, analytic[t], 5e-3f) < 2e-3);
  }
}

}  // namespace

TEST_CASE("MoeLayer: GELU experts with capacity dropping match finite differences") {
  check_layer(ExpertKind::gelu, 1.25);
}

TEST_CASE("MoeLayer: SwiGLU experts, dropless, match finite differences") {
  check_layer(ExpertKind::swiglu, 0.0);
}

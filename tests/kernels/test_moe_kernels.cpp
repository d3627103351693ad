// File: test_moe_kernels.cpp
// The mixture-of-experts CUDA kernels' arithmetic, run on the host through their twins
// (moe_kernel_twins.h), against the CPU backend: bit for bit in fp32, both routers (softmax_topk,
// sigmoid_bias), with capacity dropping some choices. 37 tokens (not a warp multiple), 6
// experts, top 2, 70 channels.
#include <doctest/doctest.h>

#include <vector>

#include "kernel_fixtures.h"
#include "model/moe_routing.h"
#include "moe_kernel_twins.h"

using namespace whale::exec;
using namespace whale::exec::test;

namespace {
constexpr int kTokens = 37, kExperts = 6, kTopK = 2, kChannels = 70;
TensorView i32_view(std::vector<int32_t>& x) { return {x.data(), x.size(), DType::i32}; }
}  // namespace

TEST_CASE("MoE router forward and backward kernels equal the CPU backend bit for bit") {
  for (const whale::plan::MoeRouter router :
       {whale::plan::MoeRouter::softmax_topk, whale::plan::MoeRouter::sigmoid_bias}) {
    CAPTURE(whale::plan::to_string(router));
    auto cpu = make_reference();
    const auto logits = random_vector(kTokens * kExperts, 21, 3.0f);
    const auto bias = random_vector(kExperts, 25, 0.5f);  // steers sigmoid_bias's choice
    std::vector<float> probs(logits.size()), gates(kTokens * kTopK), ref_probs(probs), ref_gates(gates);
    std::vector<int32_t> chosen(kTokens * kTopK), ref_chosen(chosen);
    cpu->moe_router_forward(router, view(ref_probs), i32_view(ref_chosen), view(ref_gates),
                            view(logits), view(bias), kTokens, kExperts, kTopK);
    twin_moe_router_forward(router, probs.data(), chosen.data(), gates.data(), logits.data(),
                            bias.data(), kTokens, kExperts, kTopK);
    CHECK(chosen == ref_chosen);
    CHECK(probs == ref_probs);
    CHECK(gates == ref_gates);

    const auto dgates = random_vector(gates.size(), 22), aux = random_vector(kExperts, 23, 0.1f);
    auto dlogits = random_vector(logits.size(), 24);  // backward adds into it
    auto ref_dlogits = dlogits;
    cpu->moe_router_backward(router, view(ref_dlogits), view(ref_probs), view(ref_chosen),
                             view(ref_gates), view(dgates), view(aux), kTokens, kExperts, kTopK);
    twin_moe_router_backward(router, dlogits.data(), probs.data(), chosen.data(), gates.data(),
                             dgates.data(), aux.data(), kTokens, kExperts, kTopK);
    CHECK(dlogits == ref_dlogits);
  }
}

TEST_CASE("MoE dispatch and combine kernels equal the CPU backend bit for bit, dropped slots skipped") {
  auto cpu = make_reference();
  std::vector<int32_t> chosen(kTokens * kTopK);
  for (int n = 0; n < kTokens; ++n) {  // skewed toward expert 0, so capacity drops some
    chosen[n * kTopK] = n % 3 == 0 ? 0 : n % kExperts;
    chosen[n * kTopK + 1] = (chosen[n * kTopK] + 1 + n % 2) % kExperts;
  }
  MoeRoutingPlan plan = make_moe_routing(chosen, kTokens, kTopK, kExperts, 1.0);
  REQUIRE(plan.routed_rows() < kTokens * kTopK);  // some choices dropped
  const int M = plan.routed_rows();
  const auto x = random_vector(kTokens * kChannels, 31);
  std::vector<float> routed(M * kChannels), ref_routed(routed);
  cpu->moe_dispatch_forward(view(ref_routed), view(x), view(plan.source_rows), M, kChannels);
  twin_moe_dispatch_forward(routed.data(), x.data(), plan.source_rows.data(), M, kChannels);
  CHECK(routed == ref_routed);

  const auto y = random_vector(M * kChannels, 32), gates = random_vector(kTokens * kTopK, 33);
  auto out = random_vector(kTokens * kChannels, 34);
  auto ref_out = out;
  cpu->moe_combine_forward(view(ref_out), view(y), view(gates), view(plan.slot_rows), kTokens,
                           kTopK, kChannels);
  twin_moe_combine_forward(out.data(), y.data(), gates.data(), plan.slot_rows.data(), kTokens,
                           kTopK, kChannels);
  CHECK(out == ref_out);

  const auto dout = random_vector(kTokens * kChannels, 35);
  auto dy = random_vector(M * kChannels, 36), dgates = random_vector(kTokens * kTopK, 37);
  auto ref_dy = dy, ref_dgates = dgates;
  cpu->moe_combine_backward(view(ref_dy), view(ref_dgates), view(dout), view(y), view(gates),
                            view(plan.slot_rows), kTokens, kTopK, kChannels);
  twin_moe_combine_backward(dy.data(), dgates.data(), dout.data(), y.data(), gates.data(),
                            plan.slot_rows.data(), kTokens, kTopK, kChannels);
  CHECK(dy == ref_dy);
  CHECK(dgates == ref_dgates);

  auto dx = random_vector(kTokens * kChannels, 38);
  auto ref_dx = dx;
  cpu->moe_dispatch_backward(view(ref_dx), view(y), view(plan.slot_rows), kTokens, kTopK,
                             kChannels);
  twin_moe_dispatch_backward(dx.data(), y.data(), plan.slot_rows.data(), kTokens, kTopK,
                             kChannels);
  CHECK(dx == ref_dx);
}

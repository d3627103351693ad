// File: test_ops_adamw_slice.cpp
// The sharded optimizer (ZeRO-1) in isolation, with exact numbers: AdamW restricted to a slice
// that straddles a parameter boundary, checked against values worked out by hand.
#include <doctest/doctest.h>

#include <vector>

#include "whale/exec/model/adamw.h"
#include "host_views.h"
#include "sliced_params.h"

using namespace whale::exec;
using whale::exec::test::make_cpu_backend;
using Params = whale::exec::test::SlicedParams;

namespace {
// Dyadic hyper-parameters, so that step 1 is exact: m^ = g, v^ = g^2, the update is sign(g)
// and p1 = p - lr * (sign(g) + wd * p) = 0.75 p - 0.5 sign(g).
AdamWConfig dyadic_config() {
  AdamWConfig c;
  c.learning_rate = 0.5;
  c.beta1 = 0.5;
  c.beta2 = 0.75;
  c.eps = 0.0;
  c.weight_decay = 0.5;
  return c;
}
}  // namespace

TEST_CASE("adamw slice [2, 4): two steps give the hand-computed values and touch nothing else") {
  auto be = make_cpu_backend();
  Params sliced, full;
  const AdamWConfig c = dyadic_config();
  AdamW shard(*be, sliced.views(), c, 2, 4);
  AdamW whole(*be, full.views(), c);
  REQUIRE(shard.state_count() == 2);

  shard.step();
  whole.step();
  // Slice: a2 = 0.75 * -4 - 0.5 * sign(0.5) = -3.5; b0 = 0.75 * 8 - 0.5 * sign(-0.25) = 6.5.
  CHECK(sliced.a == std::vector<float>{1, 2, -3.5f});
  CHECK(sliced.b == std::vector<float>{6.5f, 0.5f});
  // Full update: a0 = 0.75 - 0.5, a1 = 1.5 + 0.5, b1 = 0.375 - 0.5.
  CHECK(full.a == std::vector<float>{0.25f, 2.0f, -3.5f});
  CHECK(full.b == std::vector<float>{6.5f, -0.125f});
  // Moments of the slice: m = 0.5 g, v = 0.25 g^2.
  CHECK(shard.first_moment().as<float>()[0] == 0.25f);
  CHECK(shard.first_moment().as<float>()[1] == -0.125f);
  CHECK(shard.second_moment().as<float>()[0] == 0.0625f);
  CHECK(shard.second_moment().as<float>()[1] == 0.015625f);

  // Step 2 with the gradients negated: m = 0.25 g1 - 0.5 g1 = -0.25 g1, m^ = m / 0.75 = -g1 / 3;
  // v = 0.1875 g1^2 + 0.25 g1^2 = 0.4375 g1^2, v^ = v / 0.4375 = g1^2; the update is
  // -sign(g1) / 3 and p2 = p1 - 0.5 * (-sign(g1) / 3 + 0.5 * p1) = 0.75 p1 + sign(g1) / 6.
  sliced.flip_gradients();
  full.flip_gradients();
  shard.step();
  whole.step();
  const float a2 = static_cast<float>(0.75 * -3.5 + 1.0 / 6);  // sign(0.5) = +1
  const float b0 = static_cast<float>(0.75 * 6.5 - 1.0 / 6);   // sign(-0.25) = -1
  CHECK(sliced.a == std::vector<float>{1, 2, a2});
  CHECK(sliced.b == std::vector<float>{b0, 0.5f});
  CHECK(full.a[2] == a2);
  CHECK(full.b[0] == b0);
  CHECK(shard.step_count() == 2);
  CHECK(shard.first_moment().as<float>()[0] == -0.125f);
  CHECK(shard.first_moment().as<float>()[1] == 0.0625f);
  CHECK(shard.second_moment().as<float>()[0] == 0.109375f);     // 0.4375 * 0.25
  CHECK(shard.second_moment().as<float>()[1] == 0.02734375f);   // 0.4375 * 0.0625
}

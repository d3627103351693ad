// File: test_ops_slowdown.cpp
// The slowdown decorator (make_backend with slowdown_factor): compute ops give bit-identical
// results to the undecorated backend and wait exactly (factor - 1) times their duration on an
// injected clock; memory ops pass through without waiting.
#include <doctest/doctest.h>

#include <vector>

#include "backend/ops_slowdown.h"
#include "whale/exec/backend/backend_factory.h"
#include "host_views.h"

using namespace whale::exec;
using whale::exec::test::host_view;

namespace {
std::unique_ptr<Backend> backend_slowed_by(double factor) {
  BackendRequest request;
  request.slowdown_factor = factor;
  return make_backend(request);
}

// c (3, 2) = a (3, 4) * b (4, 2) on `backend`, with awkward values so that any change in the
// order of the sums shows.
std::vector<float> small_matmul(Backend& backend) {
  std::vector<float> a = {0.1f, -2.3f, 3.7f, 1e-3f, 5.5f, -0.6f, 0.7f, 8.9f, -9.1f, 1.01f, 1.1f, 0.12f};
  std::vector<float> b = {1.3f, -1.4f, 0.15f, 16.1f, -0.17f, 1.8f, 1.9f, -2e-2f};
  std::vector<float> c(6, 0.0f);
  backend.matmul(false, false, 3, 2, 4, host_view(a), host_view(b), host_view(c), false);
  backend.synchronize();
  return c;
}
}  // namespace

TEST_CASE("slowdown: a slowed matmul is bit-identical to the plain backend's") {
  auto plain = backend_slowed_by(1.0);
  auto slowed = backend_slowed_by(2.0);
  CHECK(small_matmul(*slowed) == small_matmul(*plain));
}

// A clock that advances by 0.25 s at every reading, and records every wait asked of it.
struct FakeClock {
  double now = 0.0;
  int readings = 0;
  std::vector<double> waits;
  SlowdownClock clock() {
    return SlowdownClock{[this] {
                           ++readings;
                           const double t = now;
                           now += 0.25;
                           return t;
                         },
                         [this](double seconds) { waits.push_back(seconds); }};
  }
};

TEST_CASE("slowdown: a compute op waits (factor - 1) times its measured duration, exactly") {
  FakeClock fake;
  auto slowed = make_slowed_backend(make_backend(BackendRequest{}), 3.0, fake.clock());
  small_matmul(*slowed);  // readings 0 and 0.25 around the op: 0.25 s, so (3 - 1) * 0.25
  CHECK(fake.readings == 2);
  REQUIRE(fake.waits.size() == 1);
  CHECK(fake.waits[0] == 0.5);
  std::vector<float> x = {1.0f, 2.0f};
  slowed->scale(host_view(x), 2.0);  // readings 0.5 and 0.75: another 0.5
  CHECK(fake.waits == std::vector<double>{0.5, 0.5});
  CHECK(x == std::vector<float>{2.0f, 4.0f});
}

TEST_CASE("slowdown: memory ops neither read the clock nor wait") {
  FakeClock fake;
  auto slowed = make_slowed_backend(make_backend(BackendRequest{}), 1e6, fake.clock());
  std::vector<float> src(256, 1.5f), dst(256, 0.0f);
  for (int i = 0; i < 1000; ++i) {
    slowed->copy(host_view(dst), host_view(src), Stream::compute);
    slowed->fill_zero(host_view(dst), Stream::compute);
  }
  slowed->copy(host_view(dst), host_view(src), Stream::compute);
  slowed->synchronize();
  CHECK(fake.readings == 0);
  CHECK(fake.waits.empty());
  CHECK(dst == src);
}

TEST_CASE("slowdown: a factor of at most 1 returns the backend undecorated") {
  auto inner = make_backend(BackendRequest{});
  Backend* raw = inner.get();
  CHECK(make_slowed_backend(std::move(inner), 1.0).get() == raw);
}

TEST_CASE("slowdown: the steady clock's wait lasts at least what was asked") {
  const SlowdownClock steady = steady_wait();
  const double before = steady.now_s();
  steady.wait_s(0.01);
  CHECK(steady.now_s() - before >= 0.01);
}

// File: test_ops_slowdown.cpp
// The slowdown decorator (make_backend with slowdown_factor): compute ops give bit-identical
// results to the undecorated backend, and memory ops pass through without waiting.
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

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

TEST_CASE("slowdown: memory ops pass through without waiting, even at a factor of 1e6") {
  // Were copies slowed, 2000 of them at a factor of 1e6 would wait 1e6 times their own time
  // (~100 ns each, so ~0.1 s of waiting each): minutes. Passed through, they take well under
  // the 10 s bound.
  auto slowed = backend_slowed_by(1e6);
  std::vector<float> src(256, 1.5f), dst(256, 0.0f);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    slowed->copy(host_view(dst), host_view(src), Stream::compute);
    slowed->fill_zero(host_view(dst), Stream::compute);
  }
  slowed->copy(host_view(dst), host_view(src), Stream::compute);
  slowed->synchronize();
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 10.0);
  CHECK(dst == src);
}

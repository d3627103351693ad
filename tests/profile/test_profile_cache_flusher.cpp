// File: test_profile_cache_flusher.cpp
// The flush's size: twice sysfs's cache, never over 1 GiB, else 64 MiB; the private caches'
// flush: twice the L2; and the line read that the flusher and the cache sweep share.
#include <doctest/doctest.h>

#include <vector>

#include "whale/exec/profile/profile_cache_flusher.h"
#include "whale/exec/profile/profile_cache_sweep.h"

using namespace whale::exec;

namespace {
constexpr double kMiB = 1048576.0;
}  // namespace

TEST_CASE("the flush is twice sysfs's cache, at most 1 GiB, and 64 MiB where sysfs reports none") {
  CHECK(cache_flush_bytes(32 * kMiB) == static_cast<std::size_t>(64 * kMiB));
  CHECK(cache_flush_bytes(19.3 * kMiB) == static_cast<std::size_t>(2 * 19.3 * kMiB));
  CHECK(cache_flush_bytes(768 * kMiB) == static_cast<std::size_t>(1024 * kMiB));
  CHECK(cache_flush_bytes(0) == static_cast<std::size_t>(64 * kMiB));
  CHECK(CacheFlusher(8 * kMiB).bytes() == static_cast<std::size_t>(16 * kMiB));
}

TEST_CASE("the private caches' flush is twice the L2 that sysconf reports, else twice 1 MiB") {
  CHECK(CacheFlusher::of_private_caches(1 << 20).bytes() == static_cast<std::size_t>(2 * kMiB));
  CHECK(CacheFlusher::of_private_caches(512 << 10).bytes() == static_cast<std::size_t>(kMiB));
  CHECK(CacheFlusher::of_private_caches(0).bytes() == static_cast<std::size_t>(2 * kMiB));
  CHECK(CacheFlusher::of_private_caches(-1).bytes() == static_cast<std::size_t>(2 * kMiB));  // sysconf: unknown
}

TEST_CASE("read_lines sums the first float of every 64-byte line, a partial line included") {
  // 16 floats a line; 8 whole lines, then 3 floats of a ninth, the first read.
  std::vector<float> data(16 * 8 + 3, 0.0f);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = (i % 16 == 0) ? static_cast<float>(i / 16 + 1) : 100.0f;
  CHECK(read_lines(data.data(), data.size()) == doctest::Approx(45.0));  // 1 + 2 + ... + 9
  CHECK(read_lines(data.data(), 0) == 0.0f);
}

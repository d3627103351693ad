// File: test_profile_statistics.cpp
// Medians, the latency + bandwidth fit, bus factors and efficiency curves on hand-checked data.
#include <doctest/doctest.h>

#include <string>

#include "whale/exec/profile/profile_statistics.h"
#include "whale/plan/error.h"

using namespace whale::exec;

TEST_CASE("median of odd and even counts") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({7.0}) == 7.0);
  CHECK(max_value({1.0, 9.0, 3.0}) == 9.0);
}

TEST_CASE("the fit recovers an exact latency + bandwidth line") {
  // time = 2 us + bytes / 1 GB/s
  const std::vector<TimedTransfer> samples = {
      {1e3, 2e-6 + 1e-6}, {1e6, 2e-6 + 1e-3}, {1e7, 2e-6 + 1e-2}};
  const LatencyBandwidthFit fit = fit_latency_bandwidth(samples, "links.ping_pong");
  CHECK(fit.latency_s == doctest::Approx(2e-6).epsilon(1e-9));
  CHECK(fit.bandwidth_bytes_per_s == doctest::Approx(1e9).epsilon(1e-9));
}

TEST_CASE("a negative fitted latency is clamped to zero") {
  // Two points: slope 2 ns/byte, intercept -1 us.
  const LatencyBandwidthFit fit =
      fit_latency_bandwidth({{1000, 1e-6}, {2000, 3e-6}}, "links.ping_pong");
  CHECK(fit.latency_s == 0.0);
  CHECK(fit.bandwidth_bytes_per_s == doctest::Approx(5e8));
}

TEST_CASE("the fit refuses a single size and times that do not grow") {
  try {
    fit_latency_bandwidth({{64, 1e-6}, {64, 2e-6}}, "links.all_reduce");
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()) ==
          "links.all_reduce: timings at two or more distinct message sizes for the fit "
          "(hint: widen the sweep of message sizes)");
  }
  try {
    fit_latency_bandwidth({{64, 5e-6}, {4096, 1e-6}}, "links.ping_pong");
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(e.yaml_path() == "links.ping_pong");
    CHECK(e.expected() == "times that grow with the message size (a positive bandwidth)");
  }
}

TEST_CASE("all-reduce bus factor follows nccl-tests: 2(n-1)/n") {
  CHECK(all_reduce_bus_factor(1) == 0.0);
  CHECK(all_reduce_bus_factor(2) == 1.0);
  CHECK(all_reduce_bus_factor(4) == 1.5);
  CHECK(all_reduce_bus_factor(8) == 1.75);
}

TEST_CASE("efficiency curve is achieved / peak, sorted by size") {
  const whale::plan::EfficiencyCurve curve = efficiency_curve({4.0, 1.0}, {2.0, 1.0}, 4.0);
  REQUIRE(curve.points().size() == 2);
  CHECK(curve.points()[0].size == 1.0);
  CHECK(curve.points()[0].efficiency == 0.25);
  CHECK(curve.points()[1].size == 4.0);
  CHECK(curve.points()[1].efficiency == 0.5);
}

TEST_CASE("efficiency above the peak is clamped to 1") {
  const whale::plan::EfficiencyCurve curve = efficiency_curve({1.0, 2.0}, {30.0, 5.0}, 10.0);
  CHECK(curve.points()[0].efficiency == 1.0);
  CHECK(curve.points()[1].efficiency == 0.5);
}

TEST_CASE("the GEMM curve is the non-decreasing envelope of the measured efficiencies") {
  // Sorted by FLOPs: 0.2, 0.6, 0.3 (a dip), 0.8, 0.7 (a dip), peak 10.
  const whale::plan::EfficiencyCurve curve =
      gemm_efficiency_curve({8.0, 1.0, 4.0, 2.0, 16.0}, {8.0, 2.0, 3.0, 6.0, 7.0}, 10.0);
  REQUIRE(curve.points().size() == 5);
  const double expected[] = {0.2, 0.6, 0.6, 0.8, 0.8};
  for (int i = 0; i < 5; ++i) {
    CHECK(curve.points()[i].size == (1 << i));
    CHECK(curve.points()[i].efficiency == doctest::Approx(expected[i]));
  }
}

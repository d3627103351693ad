// File: test_profile_devices.cpp
// Device selection (--device), the CUDA error without a usable device, /proc parsing, and a
// quick CPU probe whose profile must load back through whale-plan's validator.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/exec/profile/profile_cpu_prober.h"
#include "whale/exec/profile/profile_device_prober.h"
#include "whale/exec/profile/profile_output.h"
#include "whale/plan/error.h"

using namespace whale::exec;
using whale::plan::Precision;

namespace {

std::string device_error(const std::string& text) {
  try {
    parse_device_spec(text);
  } catch (const whale::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("--device accepts cpu, cuda and cuda:N") {
  CHECK(parse_device_spec("cpu").kind == DeviceSpec::Kind::cpu);
  CHECK(parse_device_spec("cuda").kind == DeviceSpec::Kind::cuda);
  CHECK(parse_device_spec("cuda").index == 0);
  CHECK(parse_device_spec("cuda:3").index == 3);
}

TEST_CASE("--device refuses anything else, naming the flag and what was given") {
  CHECK(device_error("tpu") ==
        "--device: cpu or cuda:N, got \"tpu\" (hint: the devices whale-profile can measure are "
        "cpu and cuda:0, cuda:1, ...)");
  for (const char* bad : {"", "cuda:", "cuda:x", "cuda:-1", "cudax", "cuda:1x", "CPU"})
    CHECK(device_error(bad).find("--device: cpu or cuda:N, got \"" + std::string(bad) + "\"") == 0);
}

TEST_CASE("a CUDA device that is not there is a clear error") {
  // Ordinal 1000: no machine has it, so this holds with and without a GPU or CUDA build.
  try {
    make_device_prober(parse_device_spec("cuda:1000"));
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(e.yaml_path() == "--device");
    CHECK(e.expected().find("no CUDA device") == 0);
  }
}

TEST_CASE("cpu peak from /proc/cpuinfo: threads x clock x flops per cycle") {
  const CpuPeak peak = cpu_peak_from_cpuinfo("model name\t: X\ncpu MHz\t\t: 2000.000\n");
  CHECK(peak.clock_hz == 2e9);
  CHECK(peak.threads >= 1);
  CHECK(peak.flops_per_s == doctest::Approx(peak.threads * 2e9 * peak.flops_per_cycle));
  if (peak.isa == "sse") CHECK(peak.flops_per_cycle == 8);
  if (peak.isa == "avx+fma") CHECK(peak.flops_per_cycle == 32);
  CHECK(cpu_peak_from_cpuinfo("model name\t: X\n").flops_per_s == 0);
}

TEST_CASE("MemAvailable from /proc/meminfo") {
  CHECK(mem_available_bytes("MemTotal:  100 kB\nMemAvailable:   2048 kB\n") == 2048.0 * 1024);
  CHECK(mem_available_bytes("MemTotal:  100 kB\n") == 0);
}

TEST_CASE("a quick CPU probe gives a profile that whale-plan loads") {
  std::unique_ptr<DeviceProber> prober = make_device_prober(parse_device_spec("cpu"));
  ProbeOptions options;
  options.quick = true;
  options.name = "cpu-probe-test";
  const ProbeResult result = prober->measure(options, [](const std::string&) {});
  const whale::plan::DeviceProfile loaded = write_validated_profile(
      result.profile, std::string(WHALE_BINARY_DIR) + "/profile-tests/cpu-probe-test.yaml");
  CHECK(loaded.kind == "cpu");
  CHECK(loaded.name == "cpu-probe-test");
  const auto& points = loaded.gemm_curve(Precision::fp32).points();
  // Transformer blocks of width h = 32 .. 256 over 2h tokens: the mean product of qkv (h -> 3h),
  // proj (h -> h), fc1 (h -> 4h) and fc2 (4h -> h) is 2 * 2h * h * (3 + 1 + 4 + 4)h / 4 = 12 h^3.
  REQUIRE(points.size() == 4);
  CHECK(points.front().size == doctest::Approx(12.0 * 32 * 32 * 32));
  CHECK(points.back().size == doctest::Approx(12.0 * 256 * 256 * 256));
  CHECK(loaded.memory_efficiency.points().size() == 8);  // 4 KiB .. 64 MiB, x4
  CHECK(loaded.memory_bytes > 0);
  REQUIRE(result.op_timings.size() == 6);
  // Every op of the layer, in order, timed over the quick sample count (3), each linear layer
  // at its own shape (the weight buffer holds the largest, wide x channels).
  const std::vector<std::string> names = {"gelu_forward", "layernorm_forward",
                                          "linear_forward attention_out", "linear_forward mlp_down",
                                          "linear_forward mlp_up", "linear_forward qkv"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const OpTiming& t = result.op_timings[i];
    CHECK(t.name == names[i]);
    CHECK(t.calls == 3);
    CHECK(t.median_s > 0);
    CHECK(t.total_s == t.median_s * t.calls);
  }
  for (const auto& point : points) {
    CHECK(point.efficiency > 0);
    CHECK(point.efficiency <= 1);
  }
  CHECK(result.op_timing_source == "wall clock, CPU backend");
}

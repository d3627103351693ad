// File: test_profile_gpu_measurements.cpp
// A GPU probe's measurements (filled by hand) become a profile with hand-checked peaks, curves
// and op-class bandwidths, and that profile, written by whale-profile's writer, loads back
// through libplan's loader with equal values.
#include <doctest/doctest.h>

#include <string>

#include "whale/exec/profile/profile_gpu_measurements.h"
#include "whale/exec/profile/profile_output.h"

using namespace whale::exec;
using whale::plan::DeviceProfile;
using whale::plan::EfficiencyCurve;
using whale::plan::Precision;

namespace {

/// Relative 1e-12: the writer prints 15 significant digits.
doctest::Approx same(double value) { return doctest::Approx(value).epsilon(1e-12); }

GpuMeasurements hand_measurements() {
  GpuMeasurements m;
  m.name = "gpu-hand";
  m.source = "filled by hand in test_profile_gpu_measurements.cpp";
  m.memory_bytes = 75.0 * whale::kBytesPerGiB;
  m.gemm[Precision::bf16] = {{8e9, 1e-5}, {1e9, 2e-6}};    // 800 and 500 TFLOP/s
  m.gemm[Precision::fp16] = {{8e9, 1e-5}};                 // 800 TFLOP/s
  m.gemm[Precision::fp32] = {{1e9, 5e-5}, {8e9, 2e-4}};    // 20 and 40 TFLOP/s
  m.copy = {{1073741824.0, 4.294967296e-4}, {1048576.0, 1.048576e-6}};  // 2500, 1000 GB/s
  m.kernel_launch_s = 4e-6;
  m.op_classes["gelu"] = {8e6, 4e-6};       // 2000 GB/s
  m.op_classes["layernorm"] = {2e6, 2e-6};  // 1000 GB/s
  m.flash_attention = {{64, 3e12, 1e-2, 4e-2}, {128, 3e12, 1e-2, 3e-2}};  // model FLOPs, s, s
  return m;
}

void check_curve(const EfficiencyCurve& got, const EfficiencyCurve& want) {
  REQUIRE(got.points().size() == want.points().size());
  for (std::size_t i = 0; i < want.points().size(); ++i) {
    CHECK(got.points()[i].size == same(want.points()[i].size));
    CHECK(got.points()[i].efficiency == same(want.points()[i].efficiency));
  }
}

}  // namespace

TEST_CASE("gpu_profile_from: peaks, curves, bandwidths from hand-checked times") {
  const DeviceProfile p = gpu_profile_from(hand_measurements());
  CHECK(p.name == "gpu-hand");
  CHECK(p.kind == "gpu");
  CHECK(p.peak(Precision::bf16) == same(8e14));
  CHECK(p.peak(Precision::fp16) == same(8e14));
  CHECK(p.peak(Precision::fp32) == same(4e13));
  CHECK(p.peak_flops_per_s.count(Precision::tf32) == 0);
  check_curve(p.gemm_curve(Precision::bf16), EfficiencyCurve({{1e9, 0.625}, {8e9, 1.0}}));
  check_curve(p.gemm_curve(Precision::fp32), EfficiencyCurve({{1e9, 0.5}, {8e9, 1.0}}));
  CHECK(p.memory_bandwidth_bytes_per_s == same(2.5e12));  // the largest copy
  check_curve(p.memory_efficiency, EfficiencyCurve({{1048576.0, 0.4}, {1073741824.0, 1.0}}));
  CHECK(p.op_bandwidth("gelu_forward") == same(2e12));
  CHECK(p.op_bandwidth("ln_f.layernorm") == same(1e12));
  CHECK(p.kernel_launch_s == 4e-6);
  CHECK(p.memory_bytes == 75.0 * whale::kBytesPerGiB);
  // whale-run's CUDA backend: 2 GiB outside its arena, no slack, flash attention
  CHECK(p.framework_memory.reserve_bytes == 2.0 * whale::kBytesPerGiB);
  CHECK(p.framework_memory.allocator_slack_fraction == 0);
  CHECK(p.framework_memory.attention == whale::plan::AttentionImplementation::flash);
  CHECK(p.framework_memory.stage_buffer_cache);  // whale-run's stage modules, as on the CPU
  // flash attention: forward 3e12 / 1e-2 = 300 TFLOP/s; backward 2 x 3e12 / 4e-2 = 150, / 3e-2 = 200
  REQUIRE(p.flash_attention.rates.size() == 2);
  CHECK(p.flash_attention.rates[0].head_size == 64);
  CHECK(p.flash_attention.rates[0].forward_flops_per_s == same(3e14));
  CHECK(p.flash_attention.rates[0].backward_flops_per_s == same(1.5e14));
  CHECK(p.flash_attention.rates[1].head_size == 128);
  CHECK(p.flash_attention.rates[1].backward_flops_per_s == same(2e14));
}

TEST_CASE("the GPU profile written by whale-profile loads back in whale-plan unchanged") {
  const DeviceProfile p = gpu_profile_from(hand_measurements());
  const std::string path = std::string(WHALE_BINARY_DIR) + "/profile-tests/gpu-hand.yaml";
  const DeviceProfile loaded = write_validated_profile(p, path);
  CHECK(loaded.name == p.name);
  CHECK(loaded.kind == "gpu");
  CHECK(loaded.source == p.source);
  CHECK(loaded.memory_bytes == same(p.memory_bytes));
  CHECK(loaded.memory_bandwidth_bytes_per_s == same(p.memory_bandwidth_bytes_per_s));
  CHECK(loaded.kernel_launch_s == same(p.kernel_launch_s));
  REQUIRE(loaded.peak_flops_per_s.size() == 3);
  for (Precision precision : {Precision::bf16, Precision::fp16, Precision::fp32}) {
    CHECK(loaded.peak(precision) == same(p.peak(precision)));
    check_curve(loaded.gemm_curve(precision), p.gemm_curve(precision));
  }
  check_curve(loaded.memory_efficiency, p.memory_efficiency);
  REQUIRE(loaded.op_bandwidth_bytes_per_s.size() == 2);
  CHECK(loaded.op_bandwidth_bytes_per_s.at("gelu") == same(2e12));
  CHECK(loaded.op_bandwidth_bytes_per_s.at("layernorm") == same(1e12));
}

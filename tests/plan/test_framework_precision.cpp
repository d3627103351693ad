// File: test_framework_precision.cpp
// The effective GEMM precision of a device (TF32 allowed, documented fallbacks, the clear error
// without any figure), and the framework settings in model and plan files.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/framework_precision.h"
#include "whale/plan/plan.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;
using whale::plan::testing::source_path;

namespace {

DeviceProfile profile_with(std::vector<Precision> peaks) {
  DeviceProfile p;
  p.name = "dev";
  for (Precision precision : peaks) p.peak_flops_per_s[precision] = 1e12;
  return p;
}

}  // namespace

TEST_CASE("the effective GEMM precision: TF32 where allowed and present, fp32 as the fallback") {
  const DeviceProfile ampere = profile_with({Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16});
  const DeviceProfile volta = profile_with({Precision::fp32, Precision::fp16});
  FrameworkPrecision tf32;
  tf32.allow_tf32 = true;
  CHECK(effective_gemm_precision(Precision::fp32, tf32, ampere) == Precision::tf32);
  CHECK(effective_gemm_precision(Precision::fp32, {}, ampere) == Precision::fp32);
  CHECK(effective_gemm_precision(Precision::fp32, tf32, volta) == Precision::fp32);
  CHECK(effective_gemm_precision(Precision::tf32, {}, volta) == Precision::fp32);
  CHECK(effective_gemm_precision(Precision::bf16, tf32, ampere) == Precision::bf16);
  CHECK(effective_gemm_precision(Precision::bf16, {}, volta) == Precision::fp32);
  CHECK(effective_gemm_precision(Precision::fp16, {}, volta) == Precision::fp16);
  // fp16 has no fallback: a profile without it is the profile's clear error.
  CHECK_SPEC_ERROR([&] { effective_gemm_precision(Precision::fp16, {}, profile_with({Precision::fp32})); },
                   "profile dev", "peak_tflops.fp16", "has no peak for fp16");
  // The peak itself no longer falls back (bf16 was once priced at fp16's).
  CHECK_SPEC_ERROR([&] { volta.peak(Precision::bf16); }, "profile dev", "peak_tflops.bf16", "no peak for bf16");
}

TEST_CASE("framework settings: the model's training section, overridden by the plan, round trip") {
  const std::string model = scratch_file("framework/model.yaml",
      "name: m\nfamily: gpt\nlayers: 2\nhidden: 64\nheads: 4\nsequence: 16\nvocabulary: 100\n"
      "training: {global_batch: 4, precision: fp32, optimizer: adamw, allow_tf32: true,\n"
      "           grad_reduce_precision: fp32}\n");
  const std::string cluster = scratch_file("framework/cluster.yaml",
      "name: c\nnodes:\n  - name: n\n    devices: [{model: a100-sxm4-80gb, count: 1}]\n"
      "    intra_link: {kind: nvlink, bandwidth_gbps: 100, latency_us: 1}\n"
      "    network: {kind: ib, bandwidth_gbps: 100, latency_us: 1}\n");
  const std::string plan_head = "cluster: cluster.yaml\nmodel: model.yaml\nmicro_batch_size: 1\n"
                                "micro_batches: 4\nschedule: 1f1b\nstages: [{layers: [0, 3], devices: \"0\"}]\n";
  const Plan from_model = load_plan(scratch_file("framework/plan.yaml", plan_head));
  CHECK(from_model.framework_precision.allow_tf32);
  CHECK(from_model.framework_precision.grad_reduce == GradReducePrecision::fp32);
  CHECK(from_model.framework_precision.master_weights == MasterWeights::fp32);
  const Plan overridden = load_plan(scratch_file("framework/plan2.yaml",
      plan_head + "allow_tf32: false\nmaster_weights: none\n"));
  CHECK_FALSE(overridden.framework_precision.allow_tf32);
  CHECK(overridden.framework_precision.grad_reduce == GradReducePrecision::fp32);
  CHECK(overridden.framework_precision.master_weights == MasterWeights::none);
  // Embedded: the model carries its settings and the plan writes what differs from them.
  const std::string text = plan_to_yaml(overridden, /*embed=*/true);
  CHECK(text.find("allow_tf32: false") != std::string::npos);
  CHECK(text.find("master_weights: none") != std::string::npos);
  const Plan again = load_plan(scratch_file("framework/plan3.yaml", text));
  CHECK(again.framework_precision == overridden.framework_precision);
  CHECK(again.model.training.framework_precision == from_model.model.training.framework_precision);
}

TEST_CASE("bad framework settings name the field") {
  const std::string model = source_path("configs/models/tiny.yaml");
  const std::string head = "cluster: " + source_path("configs/clusters/cpu-local.yaml") +
                           "\nmodel: " + model + "\nmicro_batch_size: 1\nmicro_batches: 1\n"
                           "schedule: 1f1b\nstages: [{layers: [0, 9], devices: \"0\"}]\n";
  const std::string unknown = scratch_file("framework/bad1.yaml", head + "grad_reduce_precision: fp8\n");
  CHECK_SPEC_ERROR([&] { load_plan(unknown); }, unknown, "grad_reduce_precision",
                   "unknown grad_reduce_precision 'fp8'");
  const std::string wrong_type = scratch_file("framework/bad2.yaml", head + "allow_tf32: yes please\n");
  CHECK_SPEC_ERROR([&] { load_plan(wrong_type); }, wrong_type, "allow_tf32", "expected true or false");
  const std::string master = scratch_file("framework/bad3.yaml", head + "master_weights: fp16\n");
  CHECK_SPEC_ERROR([&] { load_plan(master); }, master, "master_weights", "unknown master_weights 'fp16'");
}

// File: test_framework_precision.cpp
// The framework's precision settings in the simulator: GEMMs priced at each device's effective
// precision (TF32 allowed on an A100, fp32 on a V100, bf16 falling back to fp32 and reported),
// gradient reduction and state bytes in fp32, and the tied-embedding exchange between the first
// and last stages.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "whale/plan/gradient_buckets.h"
#include "whale/sim/memory_model.h"
#include "whale/sim/report.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// A flat efficiency curve at `efficiency`.
plan::EfficiencyCurve flat_curve(double efficiency) {
  return plan::EfficiencyCurve({{1e6, efficiency}, {1e15, efficiency}});
}

/// Datasheet peaks (A100 SXM4: fp32 19.5, tf32 156, bf16 and fp16 312 TFLOP/s) and flat curves
/// that differ per precision: fp32 0.8, tf32 0.5, bf16 0.75.
plan::DeviceProfile a100() {
  plan::DeviceProfile p = test::flat_profile(312e12, 1e12);
  p.name = "a100";
  p.peak_flops_per_s = {{plan::Precision::fp32, 19.5e12}, {plan::Precision::tf32, 156e12},
                        {plan::Precision::fp16, 312e12}, {plan::Precision::bf16, 312e12}};
  p.gemm_efficiency = {{plan::Precision::fp32, flat_curve(0.8)},
                       {plan::Precision::tf32, flat_curve(0.5)},
                       {plan::Precision::bf16, flat_curve(0.75)}};
  return p;
}

/// V100 SXM2: fp32 15.7 and fp16 125 TFLOP/s, no tf32 and no bf16; curves fp32 0.8, fp16 0.9.
plan::DeviceProfile v100() {
  plan::DeviceProfile p = test::flat_profile(125e12, 1e12);
  p.name = "v100";
  p.peak_flops_per_s = {{plan::Precision::fp32, 15.7e12}, {plan::Precision::fp16, 125e12}};
  p.gemm_efficiency = {{plan::Precision::fp32, flat_curve(0.8)},
                       {plan::Precision::fp16, flat_curve(0.9)}};
  return p;
}

/// One node: device 0 an A100, device 1 a V100, a 1e10 B/s link without latency.
plan::Cluster a100_v100() {
  plan::Cluster c = test::make_cluster(1, 2, a100(), test::link(1e10, 0), test::link(1e10, 0));
  c.profiles["v100"] = v100();
  c.devices[1].model = "v100";
  return c;
}

/// Two stages (A100, then V100) of one 1000^3 GEMM layer (2e9 flops per sample), GPipe, one
/// micro-batch of one sample.
plan::Plan two_stage_plan(plan::Precision precision, bool allow_tf32) {
  plan::Plan p = test::pipeline_plan(a100_v100(), {test::gemm_layer(1000, 1000, 1000, 0),
                                                   test::gemm_layer(1000, 1000, 1000, 0)},
                                     plan::ScheduleKind::gpipe, 1);
  p.precision = precision;
  p.framework_precision.allow_tf32 = allow_tf32;
  return p;
}

/// The duration of the timeline event named `name` on `device`; -1 when there is none.
double event_s(const plan::Estimate& est, int device, const std::string& name) {
  for (const plan::TimelineEvent& e : est.timeline) {
    if (e.device == device && e.name == name) return e.duration_s;
  }
  return -1;
}

plan::Estimate evaluate_with_timeline(const plan::Plan& p) {
  plan::EvaluateOptions options;
  options.timeline = true;
  return Simulator().evaluate(p, options);
}

}  // namespace

TEST_CASE("fp32 with TF32 allowed: the A100 runs GEMMs at its tf32 peak and curve, the V100 at fp32") {
  const plan::Estimate tf32 = evaluate_with_timeline(two_stage_plan(plan::Precision::fp32, true));
  // A100: 2e9 / (156e12 * 0.5); V100: 2e9 / (15.7e12 * 0.8).
  CHECK(event_s(tf32, 0, "F s0 mb0") == doctest::Approx(2e9 / 78e12));
  CHECK(event_s(tf32, 1, "F s1 mb0") == doctest::Approx(2e9 / 12.56e12));
  // Plain fp32: the A100 at 19.5e12 * 0.8; the V100 unchanged.
  const plan::Estimate fp32 = evaluate_with_timeline(two_stage_plan(plan::Precision::fp32, false));
  CHECK(event_s(fp32, 0, "F s0 mb0") == doctest::Approx(2e9 / 15.6e12));
  CHECK(event_s(fp32, 1, "F s1 mb0") == doctest::Approx(2e9 / 12.56e12));
  // Only the A100 is reported, as running tf32 by request.
  const plan::Plan p = two_stage_plan(plan::Precision::fp32, true);
  CHECK(plan::gemm_precision_notes(p) == std::vector<std::string>{"a100: fp32 GEMMs run as tf32 (allow_tf32)"});
  CHECK(plan::gemm_precision_notes(two_stage_plan(plan::Precision::fp32, false)).empty());
}

TEST_CASE("bf16 on a V100 falls back to fp32 GEMMs and the reports say so") {
  const plan::Plan p = two_stage_plan(plan::Precision::bf16, false);
  const plan::Estimate est = evaluate_with_timeline(p);
  // A100 at bf16: 2e9 / (312e12 * 0.75); V100 at the fp32 peak and curve, not fp16's.
  CHECK(event_s(est, 0, "F s0 mb0") == doctest::Approx(2e9 / 234e12));
  CHECK(event_s(est, 1, "F s1 mb0") == doctest::Approx(2e9 / 12.56e12));
  const std::string note = "v100: bf16 not supported, GEMMs priced as fp32 (docs/profile.md#fallbacks)";
  CHECK(plan::gemm_precision_notes(p) == std::vector<std::string>{note});
  CHECK(format_text_report(p, est).find("precision " + note + "\n") != std::string::npos);
  CHECK(format_json_report(p, est).find("\"gemm_precision_notes\": [\"" + note + "\"]") !=
        std::string::npos);
  // fp16 has a V100 figure: no fallback, nothing reported.
  CHECK(plan::gemm_precision_notes(two_stage_plan(plan::Precision::fp16, false)).empty());
}

TEST_CASE("gradients reduced in fp32 double the bucket bytes and the all-reduce time of bf16") {
  // One stage of one layer of 1e6 parameters on both devices (dp 2), one sample each.
  plan::Plan p = test::pipeline_plan(test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                                        test::link(1e10, 0), test::link(1e10, 0)),
                                     {test::gemm_layer(1000, 1000, 1000, 0, 1e6)},
                                     plan::ScheduleKind::one_f_one_b, 1, 2);
  CHECK(plan::gradient_buckets(p, 0).at(0).bytes == 2e6);
  // Ring all-reduce of 2 ranks: bytes / bandwidth.
  CHECK(event_s(evaluate_with_timeline(p), 0, "reduce_bucket s0 b0") == doctest::Approx(2e-4));
  p.framework_precision.grad_reduce = plan::GradReducePrecision::fp32;
  CHECK(plan::gradient_buckets(p, 0).at(0).bytes == 4e6);
  CHECK(event_s(evaluate_with_timeline(p), 0, "reduce_bucket s0 b0") == doctest::Approx(4e-4));
}

TEST_CASE("state bytes per parameter follow the gradient precision and the master weights") {
  plan::FrameworkPrecision framework;
  StateBytesPerParam s = state_bytes_per_param(plan::Precision::bf16, "adamw", framework);
  CHECK(s.weights == 2);
  CHECK(s.gradients == 2);
  CHECK(s.optimizer == 12);  // m, v and the fp32 master copy
  framework.grad_reduce = plan::GradReducePrecision::fp32;
  framework.master_weights = plan::MasterWeights::none;
  s = state_bytes_per_param(plan::Precision::bf16, "adamw", framework);
  CHECK(s.gradients == 4);
  CHECK(s.optimizer == 8);
  // fp32 training has no master copy either way.
  CHECK(state_bytes_per_param(plan::Precision::fp32, "adamw", framework).optimizer == 8);
}

TEST_CASE("tied embeddings across device groups: the first and last stages all-reduce the table's gradient") {
  plan::Plan p = test::pipeline_plan(test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                                        test::link(1e10, 0), test::link(1e10, 0)),
                                     {test::gemm_layer(1000, 1000, 1000, 0),
                                      test::gemm_layer(1000, 1000, 1000, 0)},
                                     plan::ScheduleKind::gpipe, 1);
  p.model.vocabulary = 1000;
  p.model.hidden = 100;
  const plan::Estimate untied = evaluate_with_timeline(p);
  CHECK(event_s(untied, 0, "allreduce tied embedding s0") == -1);
  p.model.tie_embeddings = true;
  // 1000 x 100 bf16 gradients = 2e5 bytes over a ring of 2 at 1e10 B/s: 2e-5 s, on both stages,
  // before their optimizer steps; stage 0 ends the GPipe step, so the step grows by as much.
  const plan::Estimate tied = evaluate_with_timeline(p);
  CHECK(event_s(tied, 0, "allreduce tied embedding s0") == doctest::Approx(2e-5));
  CHECK(event_s(tied, 1, "allreduce tied embedding s1") == doctest::Approx(2e-5));
  CHECK(tied.step_time_s == doctest::Approx(untied.step_time_s + 2e-5));
  // Reduced in fp32: twice the bytes.
  p.framework_precision.grad_reduce = plan::GradReducePrecision::fp32;
  CHECK(event_s(evaluate_with_timeline(p), 0, "allreduce tied embedding s0") == doctest::Approx(4e-5));
  // A wave of 2 chunks brings the last stage back to the first group: its devices hold both
  // copies and add them there, no exchange.
  plan::Plan wave = test::pipeline_plan(p.cluster, std::vector<plan::Layer>(4, test::gemm_layer(1000, 1000, 1000, 0)),
                                        plan::ScheduleKind::wave, 2);
  wave.schedule.chunks = 2;
  for (int s : {0, 1, 2, 3}) wave.stages[s].devices = {s == 0 || s == 3 ? 0 : 1};
  wave.model = p.model;
  wave.model.layers.assign(4, test::gemm_layer(1000, 1000, 1000, 0));
  plan::validate_plan(wave);
  const plan::Estimate wave_est = evaluate_with_timeline(wave);
  CHECK(event_s(wave_est, 0, "allreduce tied embedding s0") == -1);
  CHECK(event_s(wave_est, 0, "allreduce tied embedding s3") == -1);
}

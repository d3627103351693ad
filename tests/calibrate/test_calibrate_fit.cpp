// File: test_calibrate_fit.cpp
// whale-calibrate's fit on synthetic runs: step times simulated with known calibration figures
// on the fidelity plans (shipped cpu-measured profile) are fitted back exactly, with a zero
// residual and leave-one-out error; the automatic choice of parameters; the memory fit (scale,
// slack, out-of-memory runs).
#include <doctest/doctest.h>

#include "whale/plan/error.h"
#include "whale/sim/calibrate.h"
#include "whale/sim/calibration_report.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

const char* const kPlans[] = {"dp2", "tp2", "pp2-1f1b", "pp2-recompute", "interleaved", "dp2-zero-accumulate"};

plan::ProfileCalibration truth() {
  plan::ProfileCalibration c;
  c.gemm_efficiency_scale = 0.8;
  c.step_overhead_s = 0.03;
  c.memory_op_time_scale = 1.25;
  return c;
}

/// The first `count` fidelity plans, each "measured" as simulated with `measured_with`.
std::vector<CalibrationRun> synthetic_runs(int count, const plan::ProfileCalibration& measured_with) {
  std::vector<CalibrationRun> runs;
  for (int i = 0; i < count; ++i) {
    CalibrationRun run;
    run.name = kPlans[i];
    run.plan = plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/fidelity/" + kPlans[i] + ".yaml");
    run.step_time_s = calibrated_step_time_s(run.plan, {{"cpu-measured", measured_with}});
    runs.push_back(run);
  }
  return runs;
}

}  // namespace

TEST_CASE("the fit recovers the figures that generated the step times") {
  const std::vector<CalibrationRun> runs = synthetic_runs(6, truth());
  CalibrationOptions options;
  options.parameters = {"gemm_efficiency_scale", "step_overhead_us", "memory_op_time_scale"};
  const CalibrationResult result = calibrate(runs, options);
  REQUIRE(result.device_models == std::vector<std::string>{"cpu-measured"});
  const plan::ProfileCalibration& fitted = result.calibrations.at("cpu-measured");
  CHECK(fitted.gemm_efficiency_scale == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(fitted.step_overhead_s == doctest::Approx(0.03).epsilon(1e-6));
  CHECK(fitted.memory_op_time_scale == doctest::Approx(1.25).epsilon(1e-6));
  CHECK(fitted.kernel_overhead_s == 0);  // not fitted: as in the input profile
  CHECK(result.rms_log_residual < 1e-7);
  CHECK(result.calibrated_mape < 1e-7);
  REQUIRE(result.leave_one_out_mape);
  CHECK(*result.leave_one_out_mape < 1e-6);
  CHECK(result.uncalibrated_mape > 0.05);  // the input profile is off by the truth's figures
  // The calibrated profile carries the fit, and its source says so.
  const plan::DeviceProfile& profile = result.profiles.at("cpu-measured");
  CHECK(profile.calibration.gemm_efficiency_scale == fitted.gemm_efficiency_scale);
  CHECK(profile.calibration.source.find("fitted by whale-calibrate: gemm_efficiency_scale, "
                                        "step_overhead_us, memory_op_time_scale from the step "
                                        "times of 6 run(s) (dp2, tp2,") == 0);
}

TEST_CASE("without a parameter list the fit takes as many as have the least leave-one-out error") {
  plan::ProfileCalibration two;  // step times that need two figures
  two.gemm_efficiency_scale = 0.8;
  two.step_overhead_s = 0.03;
  CHECK(calibrate(synthetic_runs(3, two)).fitted ==
        std::vector<std::string>{"gemm_efficiency_scale", "step_overhead_us"});
  plan::ProfileCalibration one;  // one figure explains them: a second ties, and fewer win
  one.gemm_efficiency_scale = 0.8;
  CHECK(calibrate(synthetic_runs(3, one)).fitted == std::vector<std::string>{"gemm_efficiency_scale"});
  const CalibrationResult single = calibrate(synthetic_runs(1, two));
  CHECK(single.fitted == std::vector<std::string>{"gemm_efficiency_scale"});
  CHECK_FALSE(single.leave_one_out_mape);
  CHECK(single.calibrated_mape < 1e-7);  // one parameter fits one run exactly
}

namespace {

/// The largest device peak that whale-sim predicts for `p`.
Bytes predicted_peak(const plan::Plan& p) {
  Bytes peak = 0;
  for (const plan::DeviceEstimate& d : Simulator().evaluate(p, {}).devices) peak = std::max(peak, d.peak_memory_bytes);
  return peak;
}

/// `p` with the cpu-measured profile's memory figures set.
plan::Plan with_memory(plan::Plan p, double activation_scale, double slack) {
  plan::DeviceProfile& profile = p.cluster.profiles.at("cpu-measured");
  profile.calibration.activation_memory_scale = activation_scale;
  profile.framework_memory.allocator_slack_fraction = slack;
  return p;
}

}  // namespace

TEST_CASE("the memory fit recovers the activation scale and slack that made the peaks") {
  // Peaks "measured" with 0.6 of the modelled activations and 8% slack: the input profile
  // (scale 1, no slack) over-predicts them, and the fit lowers it to the truth.
  std::vector<CalibrationRun> runs = synthetic_runs(3, {});
  for (CalibrationRun& run : runs) run.peak_memory_bytes = predicted_peak(with_memory(run.plan, 0.6, 0.08));
  const CalibrationResult result = calibrate(runs);
  CHECK(result.memory_runs == 3);
  CHECK(result.memory.fitted == std::vector<std::string>{"activation_memory_scale", "allocator_slack_fraction"});
  const MemoryFigures& fitted = result.memory.figures.at("cpu-measured");
  CHECK(fitted.activation_scale == doctest::Approx(0.6).epsilon(1e-6));
  CHECK(fitted.slack_fraction == doctest::Approx(0.08).epsilon(1e-6));
  CHECK(result.memory.calibrated_mape < 1e-6);
  REQUIRE(result.memory.leave_one_out_mape);
  CHECK(*result.memory.leave_one_out_mape < 1e-5);
  for (const MemoryRunPrediction& r : result.memory.runs) {
    CHECK(r.uncalibrated_bytes > *r.measured_bytes);
    CHECK(r.calibrated_bytes == doctest::Approx(*r.measured_bytes).epsilon(1e-6));
  }
  // The calibrated profile carries the figures, and whale-sim predicts the measured peak with it.
  const plan::DeviceProfile& profile = result.profiles.at("cpu-measured");
  CHECK(profile.calibration.activation_memory_scale == doctest::Approx(0.6).epsilon(1e-6));
  CHECK(profile.framework_memory.allocator_slack_fraction == doctest::Approx(0.08).epsilon(1e-6));
  plan::Plan calibrated = runs[0].plan;
  calibrated.cluster.profiles.at("cpu-measured") = profile;
  CHECK(predicted_peak(calibrated) == doctest::Approx(*runs[0].peak_memory_bytes).epsilon(1e-6));
  CHECK(profile.calibration.source.find("activation_memory_scale, allocator_slack_fraction, memory_reserve_gib "
                                        "from dp2, tp2, pp2-1f1b") != std::string::npos);
}

TEST_CASE("whale-calibrate lowers an over-predicted peak: one run, the activation scale alone") {
  // dp2: both replicas alike. Measured: the state and half the modelled activations, so the
  // fitted scale is exactly 0.5 and the calibrated peak the measured one.
  std::vector<CalibrationRun> runs = synthetic_runs(1, {});
  const std::vector<DeviceMemoryTerms> devices = device_memory_terms(runs[0].plan);
  REQUIRE(devices.size() == 2);
  CHECK(devices[0].fixed_tensor_bytes == devices[1].fixed_tensor_bytes);
  const Bytes state = devices[0].fixed_tensor_bytes, activations = devices[0].activation_bytes;
  REQUIRE(activations > 0);
  runs[0].peak_memory_bytes = state + 0.5 * activations;
  const CalibrationResult result = calibrate(runs);
  CHECK(result.memory.fitted == std::vector<std::string>{"activation_memory_scale"});
  CHECK(result.memory.figures.at("cpu-measured").activation_scale == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(result.memory.figures.at("cpu-measured").slack_fraction == 0);  // the input's, not fitted
  const MemoryRunPrediction& run = result.memory.runs.at(0);
  CHECK(run.uncalibrated_bytes == doctest::Approx(state + activations));
  CHECK(run.calibrated_bytes == doctest::Approx(state + 0.5 * activations).epsilon(1e-6));
  CHECK_FALSE(run.leave_one_out_bytes);  // one peak: nothing to leave out
  CHECK(result.calibrations.at("cpu-measured").memory_reserve_bytes == 0);
}

TEST_CASE("a run that ran out of memory is flagged: the calibrated model predicts it not to fit") {
  // tp2's peak is measured as predicted; dp2 (the larger per device) "ran out of memory" on a
  // device that the input profile says holds it. The fit keeps tp2 and puts dp2 over capacity.
  std::vector<CalibrationRun> runs = synthetic_runs(2, {});
  runs[1].peak_memory_bytes = predicted_peak(runs[1].plan);
  runs[0].step_time_s.reset();
  runs[0].failed = true;
  REQUIRE(Simulator().evaluate(runs[0].plan, {}).fits);
  const CalibrationResult result = calibrate(runs);
  REQUIRE(result.memory.runs.size() == 2);
  CHECK(result.memory.runs[0].failed);
  CHECK_FALSE(result.memory.runs[0].calibrated_fits);
  CHECK(result.memory.runs[1].calibrated_fits);
  plan::Plan failed = runs[0].plan, ran = runs[1].plan;
  failed.cluster.profiles.at("cpu-measured") = result.profiles.at("cpu-measured");
  ran.cluster.profiles.at("cpu-measured") = result.profiles.at("cpu-measured");
  CHECK_FALSE(Simulator().evaluate(failed, {}).fits);
  CHECK(Simulator().evaluate(ran, {}).fits);
  const std::string table = format_memory_table(result.memory, 4);
  CAPTURE(table);
  CHECK(table.find("dp2             failed") != std::string::npos);
  CHECK(table.find("out of memory, predicted not to fit") != std::string::npos);
}

TEST_CASE("the fit takes runs with peaks only, and rejects runs without any measurement") {
  std::vector<CalibrationRun> runs = synthetic_runs(1, {});
  CalibrationOptions options;
  options.parameters = {"gemm_speed"};
  CHECK_THROWS_AS(calibrate(runs, options), Error);
  runs[0].step_time_s.reset();
  runs[0].peak_memory_bytes = predicted_peak(runs[0].plan);
  const CalibrationResult memory_only = calibrate(runs);
  CHECK(memory_only.fitted.empty());
  CHECK(memory_only.runs.empty());
  CHECK(memory_only.memory.figures.at("cpu-measured").activation_scale == doctest::Approx(1).epsilon(1e-6));
  runs[0].peak_memory_bytes.reset();
  CHECK_THROWS_AS(calibrate(runs), Error);
}

namespace {

/// `runs` moved onto two nodes of one device each, joined by an "ethernet" network
/// (1.25e9 B/s, 20 us): every collective and transfer crosses it.
std::vector<CalibrationRun> across_two_nodes(std::vector<CalibrationRun> runs) {
  for (CalibrationRun& run : runs) {
    plan::Cluster& c = run.plan.cluster;
    const plan::Node local = c.nodes.at(0);
    c.nodes.clear();
    for (int d = 0; d < 2; ++d) {
      plan::Node node = local;
      node.name = "host" + std::to_string(d);
      node.device_ids = {d};
      node.network = {"ethernet", 1.25e9, 20e-6};
      c.nodes.push_back(node);
      c.devices.at(d).node = d;
      c.devices.at(d).local_index = 0;
    }
  }
  return runs;
}

/// Step times of `runs` re-measured as simulated with `measured_with`.
std::vector<CalibrationRun> measured_with(std::vector<CalibrationRun> runs, const plan::ProfileCalibration& c) {
  for (CalibrationRun& run : runs) run.step_time_s = calibrated_step_time_s(run.plan, {{"cpu-measured", c}});
  return runs;
}

}  // namespace

TEST_CASE("the fit recovers a network's bandwidth scale and latency, and leaves the intra link alone") {
  plan::ProfileCalibration truth;
  truth.gemm_efficiency_scale = 0.8;
  truth.links["ethernet"] = {0.6, 50e-6};
  const std::vector<CalibrationRun> runs = measured_with(across_two_nodes(synthetic_runs(6, {})), truth);
  CalibrationOptions options;
  options.parameters = {"gemm_efficiency_scale", "link_bandwidth_scale:ethernet", "link_latency_us:ethernet"};
  const CalibrationResult result = calibrate(runs, options);
  const plan::ProfileCalibration& fitted = result.calibrations.at("cpu-measured");
  CHECK(fitted.gemm_efficiency_scale == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(fitted.links.at("ethernet").bandwidth_scale == doctest::Approx(0.6).epsilon(1e-6));
  CHECK(fitted.links.at("ethernet").latency_s == doctest::Approx(50e-6).epsilon(1e-4));
  CHECK(fitted.links.count("shm") == 0);
  CHECK(result.calibrated_mape < 1e-7);
  REQUIRE(result.leave_one_out_mape);
  CHECK(*result.leave_one_out_mape < 1e-6);
  CHECK(result.profiles.at("cpu-measured").calibration.source.find(
            "fitted by whale-calibrate: gemm_efficiency_scale, link_bandwidth_scale:ethernet, "
            "link_latency_us:ethernet from the step times of 6 run(s)") == 0);
  // Automatically: the network's bandwidth joins the GEMM scale (least leave-one-out error).
  plan::ProfileCalibration bandwidth_only;
  bandwidth_only.gemm_efficiency_scale = 0.8;
  bandwidth_only.links["ethernet"] = {0.6, 0};
  const CalibrationResult automatic = calibrate(measured_with(runs, bandwidth_only));
  CHECK(automatic.fitted == std::vector<std::string>{"gemm_efficiency_scale", "link_bandwidth_scale:ethernet"});
  CHECK(automatic.calibrations.at("cpu-measured").links.at("ethernet").bandwidth_scale ==
        doctest::Approx(0.6).epsilon(1e-6));
  REQUIRE(automatic.leave_one_out_mape);
  CHECK(*automatic.leave_one_out_mape < 1e-6);
}

TEST_CASE("a figure that no run's step time depends on is not fitted") {
  // One device per node: no run uses the intra link ("shm"); on one node no run uses the network.
  const std::vector<CalibrationRun> two_nodes = across_two_nodes(synthetic_runs(3, {}));
  CalibrationOptions options;
  options.parameters = {"link_bandwidth_scale:shm"};
  CHECK_THROWS_WITH_AS(calibrate(two_nodes, options), doctest::Contains("no timed run depends on"), Error);
  options.parameters = {"link_latency_us:ethernet"};
  CHECK_THROWS_AS(calibrate(synthetic_runs(3, {}), options), Error);
  options.parameters = {"gemm_shape_scale:large"};  // the fidelity plans' GEMMs are below 1e10 flops
  CHECK_THROWS_AS(calibrate(synthetic_runs(3, {}), options), Error);
  options.parameters = {"link_bandwidth_scale:"};
  CHECK_THROWS_AS(calibrate(synthetic_runs(3, {}), options), Error);
}

TEST_CASE("the fit recovers GEMM shape-class scales, and prefers the single scale when one explains the runs") {
  plan::ProfileCalibration truth;
  truth.gemm_small_scale = 0.7;
  truth.gemm_medium_scale = 1.3;
  const std::vector<CalibrationRun> runs = synthetic_runs(6, truth);
  CalibrationOptions options;
  options.parameters = {"gemm_shape_scale:small", "gemm_shape_scale:medium"};
  const CalibrationResult result = calibrate(runs, options);
  const plan::ProfileCalibration& fitted = result.calibrations.at("cpu-measured");
  CHECK(fitted.gemm_small_scale == doctest::Approx(0.7).epsilon(1e-6));
  CHECK(fitted.gemm_medium_scale == doctest::Approx(1.3).epsilon(1e-6));
  CHECK(fitted.gemm_large_scale == 1.0);
  CHECK(fitted.gemm_efficiency_scale == 1.0);
  CHECK(result.calibrated_mape < 1e-7);
  // Automatically the shape classes win over the single scale, which cannot fit both classes.
  CHECK(calibrate(runs).fitted == std::vector<std::string>{"gemm_shape_scale:small", "gemm_shape_scale:medium"});
  // When one scale explains the runs, the single scale ties with the classes and wins (fewer).
  plan::ProfileCalibration uniform;
  uniform.gemm_efficiency_scale = 0.8;
  CHECK(calibrate(synthetic_runs(6, uniform)).fitted == std::vector<std::string>{"gemm_efficiency_scale"});
}

TEST_CASE("the fit recovers a per-micro-batch overhead, named, next to the GEMM scale and the step overhead") {
  // The fidelity plans run different numbers of stage passes per step (a pipeline's stages each
  // take every micro-batch), so the overhead is told apart from the per-step one.
  plan::ProfileCalibration measured_with = truth();
  measured_with.memory_op_time_scale = 1;
  measured_with.micro_batch_overhead_s = 0.004;
  const std::vector<CalibrationRun> runs = synthetic_runs(6, measured_with);
  CalibrationOptions options;
  options.parameters = {"gemm_efficiency_scale", "step_overhead_us", "micro_batch_overhead_us"};
  const CalibrationResult result = calibrate(runs, options);
  const plan::ProfileCalibration& fitted = result.calibrations.at("cpu-measured");
  CHECK(fitted.gemm_efficiency_scale == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(fitted.step_overhead_s == doctest::Approx(0.03).epsilon(1e-6));
  CHECK(fitted.micro_batch_overhead_s == doctest::Approx(0.004).epsilon(1e-6));
  CHECK(result.calibrated_mape < 1e-7);
}

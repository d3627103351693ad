// File: test_calibrate_limits.cpp
// The fit's guards: every calibrated profile loads again, however far the measured runs are
// from the prediction (step times at the CSV's range, peaks at the device memory, failed
// runs); a peak above the device memory and a parameter named twice are errors; the
// warnings say when a figure ends at its bound or the figures outnumber the runs.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "whale/plan/device_profile.h"
#include "whale/plan/error.h"
#include "whale/sim/calibrate.h"
#include "whale/sim/calibration_report.h"
#include "whale/sim/memory_fit.h"

using namespace whale;
using namespace whale::sim;

namespace {

const std::string kProfiles = std::string(WHALE_SOURCE_DIR) + "/profiles";

CalibrationRun fidelity_run(const std::string& name, int line) {
  CalibrationRun run;
  run.name = name;
  run.line = line;
  run.plan = plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/fidelity/" + name + ".yaml");
  return run;
}

// dp2 and tp2 measured at 0.5 s and 0.6 s a step.
std::vector<CalibrationRun> two_timed_runs() {
  std::vector<CalibrationRun> runs = {fidelity_run("dp2", 2), fidelity_run("tp2", 3)};
  runs[0].step_time_s = 0.5;
  runs[1].step_time_s = 0.6;
  return runs;
}

bool has_warning(const CalibrationResult& result, const std::string& words) {
  for (const std::string& w : result.warnings) {
    if (w.find(words) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("every calibrated profile loads, from step times at the CSV's bounds and peaks at the device memory") {
  const double memory = plan::load_device_profile(kProfiles + "/cpu-measured.yaml").memory_bytes;
  // 86400 s and 1e-9 s: the runs CSV's range of step times (runs_csv.cpp); the peak at the
  // device memory; a failed run beside them.
  for (const double step_s : {86400.0, 1e-9}) {
    for (const bool failed : {false, true}) {
      CAPTURE(step_s);
      CAPTURE(failed);
      std::vector<CalibrationRun> runs = {fidelity_run("dp2", 2), fidelity_run("tp2", 3)};
      runs[0].step_time_s = step_s;
      runs[0].peak_memory_bytes = memory;
      if (failed) runs[1].failed = true;
      else runs[1].step_time_s = step_s / 2;
      const CalibrationResult result = calibrate(runs);
      const std::string out = std::string(WHALE_BINARY_DIR) + "/test_calibrate_limits/" +
                              (step_s > 1 ? "slow" : "fast") + (failed ? "-failed" : "");
      std::filesystem::remove_all(out);
      write_calibrated_profiles(result, kProfiles, out);
      const plan::DeviceProfile back = plan::load_device_profile(out + "/cpu-measured.yaml");
      CHECK(back.calibration.memory_reserve_bytes < back.memory_bytes);
      CHECK(back.calibration.memory_reserve_bytes ==
            doctest::Approx(result.calibrations.at("cpu-measured").memory_reserve_bytes).epsilon(1e-12));
      // The step times are far beyond what any figure explains: the scale ends at a bound.
      CHECK(has_warning(result, " of cpu-measured fitted at the "));
    }
  }
}

TEST_CASE("a measured peak above the plan's largest device is an error naming the line and column") {
  std::vector<CalibrationRun> runs = {fidelity_run("dp2", 4)};
  runs[0].step_time_s = 0.5;
  runs[0].peak_memory_bytes = 500 * kBytesPerGiB;
  CalibrationOptions options;
  options.runs_file = "runs.csv";
  try {
    calibrate(runs, options);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.file() == "runs.csv");
    CHECK(e.yaml_path() == "line 4, column 3 (peak_memory_gib)");
    CHECK(std::string(e.what()).find("expected at most the memory of the plan's largest device (21.52 GiB), got 500 GiB") !=
          std::string::npos);
  }
}

TEST_CASE("--parameters: a name twice is an error, memory_reserve_gib is taken with memory evidence") {
  std::vector<CalibrationRun> runs = two_timed_runs();
  CalibrationOptions options;
  options.parameters = {"gemm_efficiency_scale", "gemm_efficiency_scale"};
  CHECK_THROWS_WITH_AS(calibrate(runs, options),
                       doctest::Contains("each parameter once, got 'gemm_efficiency_scale' twice"), Error);
  options.parameters = {"memory_reserve_gib"};
  CHECK_THROWS_WITH_AS(calibrate(runs, options),
                       doctest::Contains("a run with a measured peak_memory_gib or failed=true, got none"), Error);
  runs[1].peak_memory_bytes = 1.0 * kBytesPerGiB;
  options.parameters = {"gemm_efficiency_scale", "memory_reserve_gib"};
  const CalibrationResult result = calibrate(runs, options);
  CHECK(result.fitted == std::vector<std::string>{"gemm_efficiency_scale"});
  CHECK(result.memory_runs == 1);
  // The measured peak is fitted by the memory fit (activation scale), in either direction.
  REQUIRE(result.memory.runs.size() == 1);
  const MemoryRunPrediction& peak = result.memory.runs[0];
  CHECK(std::fabs(peak.calibrated_bytes - 1.0 * kBytesPerGiB) < std::fabs(peak.uncalibrated_bytes - 1.0 * kBytesPerGiB));
}

TEST_CASE("as many figures as timed runs: a warning that the in-sample error says nothing") {
  const std::vector<CalibrationRun> runs = two_timed_runs();
  CalibrationOptions options;
  options.parameters = {"gemm_efficiency_scale", "step_overhead_us"};
  const CalibrationResult two = calibrate(runs, options);
  CHECK(has_warning(two, "2 figure(s) fitted to 2 timed run(s)"));
  options.parameters = {"gemm_efficiency_scale"};
  CHECK_FALSE(has_warning(calibrate(runs, options), "figure(s) fitted to"));
}

// File: whale_calibrate.cpp
// whale-calibrate: fits a few figures of the device profiles (GEMM efficiency scale, per-step
// overhead, memory reserve, ...) to measured runs and writes a folder of calibrated profiles
// that whale-plan and whale-sim take with --profiles (docs/calibrate.md).
#include <iostream>
#include <string>
#include <vector>

#include "tool_main.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/error.h"
#include "whale/plan/version.h"
#include "whale/sim/calibrate.h"
#include "whale/sim/calibration_report.h"
#include "whale/sim/layer_times_file.h"
#include "whale/sim/runs_csv.h"

int main(int argc, char** argv) {
  CLI::App app{"whale-calibrate: fit device profiles to measured runs"};
  app.set_version_flag("--version", whale::plan::version_text("whale-calibrate"));
  std::string runs_path, profiles_dir, layer_times_path, out_dir;
  whale::sim::LayerTimesOptions layer_times_options;
  whale::sim::CalibrationOptions options;
  app.add_option("--runs", runs_path, "CSV of measured runs: plan,step_time_s,peak_memory_gib,failed")->required();
  app.add_option("--profiles", profiles_dir, "folder of device profiles to calibrate (default: shipped)")
      ->check(whale::app::existing_folder());
  app.add_option("--parameters", options.parameters,
                 "parameters to fit, comma-separated (default: as many as the runs support)")
      ->delimiter(',');
  app.add_option("--layer-times", layer_times_path,
                 "measured layer times, by content: whale's CSV (device_model,layer_kind,tp,micro_batch,forward_s,"
                 "backward_s), a per-layer profile JSON, a PyTorch profiler trace or a Megatron-LM log");
  app.add_option("--layer-times-device", layer_times_options.device_model,
                 "the device model that measured a --layer-times file other than a CSV");
  app.add_option("--layer-times-micro-batch", layer_times_options.micro_batch,
                 "a --layer-times PyTorch trace's samples per device per micro-batch");
  app.add_option("--layer-times-tp", layer_times_options.tp,
                 "a --layer-times PyTorch trace's tensor-parallel degree (default 1)");
  app.add_option("--out", out_dir, "folder to write the calibrated profiles into")->required();
  return whale::app::run_tool("whale-calibrate", app, argc, argv, [&] {
    options.runs_file = runs_path;
    const std::string profiles = profiles_dir.empty() ? whale::plan::default_profiles_dir() : profiles_dir;
    const whale::sim::LayerTimesByModel layer_times =
        layer_times_path.empty() ? whale::sim::LayerTimesByModel{}
                                 : whale::sim::load_layer_times(layer_times_path, layer_times_options, profiles);
    std::vector<whale::sim::CalibrationRun> runs;
    for (const whale::sim::MeasuredRun& measured : whale::sim::load_runs_csv(runs_path)) {
      whale::sim::CalibrationRun run;
      run.name = measured.plan_field;
      run.line = measured.line;
      run.plan = whale::plan::load_plan(measured.plan_path, profiles_dir);
      whale::sim::apply_layer_times(layer_times, &run.plan);
      run.step_time_s = measured.step_time_s;
      run.peak_memory_bytes = measured.peak_memory_bytes;
      run.failed = measured.failed;
      runs.push_back(std::move(run));
    }
    whale::sim::CalibrationResult result = whale::sim::calibrate(runs, options);
    whale::sim::add_layer_times_profiles(layer_times, profiles, &result);
    whale::sim::write_calibrated_profiles(result, profiles, out_dir);
    std::cout << whale::sim::format_calibration_report(result) << "profiles written to " << out_dir << "\n";
    for (const std::string& warning : result.warnings) std::cerr << "whale-calibrate: warning: " << warning << "\n";
    std::cout.flush();
    if (!std::cout) throw whale::Error("(stdout)", "", "a writable standard output", "the disk may be full");
    return 0;
  });
}

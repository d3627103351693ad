// File: calibration_report.cpp
// whale-calibrate's outputs (calibration_report.h).
#include "whale/sim/calibration_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "whale/plan/error.h"

namespace whale::sim {
namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", 100.0 * fraction);
  return text;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// A fitted figure in its YAML unit.
std::string yaml_value(const std::string& name, const plan::ProfileCalibration& c) {
  char text[64];
  const std::optional<CalibrationParameter> p = calibration_parameter(name, 1.0);
  if (!p) return name;
  const double value = calibration_value(c, *p);
  std::snprintf(text, sizeof(text), "%.6g", p->log_scale ? value : value * 1e6);
  return name + " " + text;
}

}  // namespace

std::string calibration_source(const CalibrationResult& result, const std::vector<CalibrationRun>& runs) {
  std::vector<std::string> timed, memory;
  for (const CalibrationRun& run : runs) {
    if (run.step_time_s) timed.push_back(run.name);
    if (run.peak_memory_bytes || run.failed) memory.push_back(run.name + (run.failed ? " (failed)" : ""));
  }
  std::ostringstream out;
  out << "fitted by whale-calibrate: ";
  if (!timed.empty()) {
    out << joined(result.fitted) << " from the step times of " << timed.size() << " run(s) ("
        << joined(timed) << "), rms residual of log step time " << result.rms_log_residual << ", MAPE "
        << percent(result.calibrated_mape) << " (uncalibrated " << percent(result.uncalibrated_mape) << ")";
    if (result.leave_one_out_mape) out << ", leave-one-out MAPE " << percent(*result.leave_one_out_mape);
  }
  if (!memory.empty()) {
    std::vector<std::string> figures = result.memory.fitted;
    figures.push_back("memory_reserve_gib");
    out << (timed.empty() ? "" : "; ") << joined(figures) << " from " << joined(memory) << ", peak MAPE "
        << percent(result.memory.calibrated_mape) << " (uncalibrated " << percent(result.memory.uncalibrated_mape)
        << ")";
    if (result.memory.leave_one_out_mape) out << ", leave-one-out " << percent(*result.memory.leave_one_out_mape);
  }
  return out.str();
}

std::string format_calibration_report(const CalibrationResult& result) {
  std::ostringstream out;
  char line[512];
  int width = 3;  // the run column fits the longest name
  for (const RunPrediction& r : result.runs) width = std::max(width, static_cast<int>(r.name.size()));
  for (const MemoryRunPrediction& r : result.memory.runs) width = std::max(width, static_cast<int>(r.name.size()));
  width = std::min(width, 400);
  if (!result.runs.empty()) out << format_step_time_table(result, width);
  if (!result.memory.runs.empty()) out << format_memory_table(result.memory, width);
  for (const auto& [model, c] : result.calibrations) {
    const bool timed = std::count(result.device_models.begin(), result.device_models.end(), model) > 0;
    const auto memory = result.memory.figures.find(model);
    if (!timed && memory == result.memory.figures.end()) continue;
    out << model << ":";
    if (timed) for (const std::string& name : result.fitted) out << " " << yaml_value(name, c);
    if (memory != result.memory.figures.end()) {
      std::snprintf(line, sizeof(line), " activation_memory_scale %.6g allocator_slack_fraction %.6g",
                    memory->second.activation_scale, memory->second.slack_fraction);
      out << line;
    }
    std::snprintf(line, sizeof(line), " memory_reserve_gib %.6g\n", c.memory_reserve_bytes / kBytesPerGiB);
    out << line;
  }
  if (!result.runs.empty()) {
    out << "calibration: " << result.runs.size() << " timed run(s), MAPE " << percent(result.uncalibrated_mape)
        << " uncalibrated, " << percent(result.calibrated_mape) << " calibrated, leave-one-out "
        << (result.leave_one_out_mape ? percent(*result.leave_one_out_mape) : "- (one run)")
        << ", rms log residual " << result.rms_log_residual << "\n";
  }
  if (!result.memory.runs.empty()) {
    const MemoryFit& m = result.memory;
    out << "memory: " << m.runs.size() << " run(s), peak MAPE " << percent(m.uncalibrated_mape) << " uncalibrated, "
        << percent(m.calibrated_mape) << " calibrated, leave-one-out "
        << (m.leave_one_out_mape ? percent(*m.leave_one_out_mape) : "- (fewer than two peaks)") << "\n";
  }
  return out.str();
}

std::string format_step_time_table(const CalibrationResult& result, int width) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s %12s %15s %13s %15s\n", width, "run", "measured_s",
                "uncalibrated_s", "calibrated_s", "leave_one_out_s");
  out << line;
  for (const RunPrediction& r : result.runs) {
    char leave_one_out[32] = "-";
    if (r.leave_one_out_s) std::snprintf(leave_one_out, sizeof(leave_one_out), "%.6g", *r.leave_one_out_s);
    std::snprintf(line, sizeof(line), "%-*s %12.6g %15.6g %13.6g %15s\n", width, r.name.c_str(),
                  r.measured_s, r.uncalibrated_s, r.calibrated_s, leave_one_out);
    out << line;
  }
  return out.str();
}

std::string format_memory_table(const MemoryFit& memory, int width) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s %17s %19s %17s %19s %s\n", width, "run", "measured_peak_gib",
                "uncalibrated_gib", "calibrated_gib", "leave_one_out_gib", "verdict");
  out << line;
  const auto gib = [](std::optional<Bytes> bytes) {
    char text[32] = "-";
    if (bytes) std::snprintf(text, sizeof(text), "%.4f", *bytes / kBytesPerGiB);
    return std::string(text);
  };
  for (const MemoryRunPrediction& r : memory.runs) {
    const char* verdict = r.failed ? (r.calibrated_fits ? "out of memory, still predicted to fit"
                                                         : "out of memory, predicted not to fit")
                                   : (r.calibrated_fits ? "fits" : "ran, predicted not to fit");
    std::snprintf(line, sizeof(line), "%-*s %17s %19s %17s %19s %s\n", width, r.name.c_str(),
                  r.failed ? "failed" : gib(r.measured_bytes).c_str(), gib(r.uncalibrated_bytes).c_str(),
                  gib(r.calibrated_bytes).c_str(), gib(r.leave_one_out_bytes).c_str(), verdict);
    out << line;
  }
  return out.str();
}

void write_calibrated_profiles(const CalibrationResult& result, const std::string& profiles_dir,
                               const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    throw Error(out_dir, "--out", "a folder that can be created and written: " + ec.message(),
                "check the path and its permissions");
  }
  for (const auto& entry : fs::directory_iterator(profiles_dir, ec)) {
    if (entry.path().extension() != ".yaml" || result.profiles.count(entry.path().stem().string())) continue;
    fs::copy_file(entry.path(), fs::path(out_dir) / entry.path().filename(),
                  fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error(out_dir, "--out", "a writable folder: " + ec.message(), "check its permissions");
  }
  for (const auto& [model, profile] : result.profiles) {
    plan::save_device_profile(profile, out_dir + "/" + model + ".yaml");
  }
}

}  // namespace whale::sim

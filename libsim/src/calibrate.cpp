// File: calibrate.cpp
// The fit of calibrate.h: bounded least squares on log step time, leave-one-out, memory reserve.
#include "whale/sim/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "whale/plan/error.h"
#include "whale/sim/bounded_least_squares.h"
#include "whale/sim/calibration_report.h"
#include "whale/sim/simulator.h"

namespace whale::sim {
namespace {

using Calibrations = std::map<std::string, plan::ProfileCalibration>;
constexpr double kMaxScale = 4.0;
constexpr double kMinLinkBandwidthScale = 0.05;
constexpr double kMaxLinkBandwidthScale = 1.5;
constexpr Seconds kMaxLinkLatencyS = 0.01;  // 10000 us
// The figure set from memory evidence rather than fitted to step times.
const char* const kMemoryReserveParameter = "memory_reserve_gib";

/// What is fitted: parameter k of device model m is x[k * models.size() + m].
struct FitSetup {
  std::vector<std::string> models;
  std::vector<CalibrationParameter> parameters;
  Calibrations start;  // the input profiles' calibrations, by model
};

std::set<std::string> models_of(const plan::Plan& plan) {
  std::set<std::string> models;
  for (const plan::Device& d : plan.cluster.devices) models.insert(d.model);
  return models;
}

Calibrations calibrations_at(const FitSetup& setup, const std::vector<double>& x) {
  Calibrations out = setup.start;
  for (std::size_t k = 0; k < setup.parameters.size(); ++k) {
    const CalibrationParameter& p = setup.parameters[k];
    for (std::size_t m = 0; m < setup.models.size(); ++m) {
      const double v = x[k * setup.models.size() + m];
      calibration_value(out[setup.models[m]], p) = p.log_scale ? std::exp(v) : v;
    }
  }
  return out;
}

/// Residuals log(predicted / measured) of the runs `use` under x.
std::vector<double> log_residuals(const std::vector<CalibrationRun>& runs,
                                  const std::vector<std::size_t>& use, const FitSetup& setup,
                                  const std::vector<double>& x) {
  const Calibrations calibrations = calibrations_at(setup, x);
  std::vector<double> r;
  for (std::size_t i : use) {
    r.push_back(std::log(calibrated_step_time_s(runs[i].plan, calibrations) / *runs[i].step_time_s));
  }
  return r;
}

/// The fit's starting point (the input figures) and bounds, laid out as FitSetup says.
struct FitBox {
  std::vector<double> start, low, high;
};
FitBox fit_box(const FitSetup& setup) {
  FitBox box;
  for (const CalibrationParameter& p : setup.parameters) {
    for (const std::string& model : setup.models) {
      const double value = calibration_value(setup.start.at(model), p);
      box.start.push_back(p.log_scale ? std::log(value) : value);
      box.low.push_back(p.log_scale ? std::log(p.low) : p.low);
      box.high.push_back(p.log_scale ? std::log(p.high) : p.high);
    }
  }
  return box;
}

Calibrations fit(const std::vector<CalibrationRun>& runs, const std::vector<std::size_t>& use,
                 const FitSetup& setup) {
  const FitBox box = fit_box(setup);
  const auto residuals = [&](const std::vector<double>& x) { return log_residuals(runs, use, setup, x); };
  return calibrations_at(setup, solve_bounded_least_squares(residuals, box.start, box.low, box.high).x);
}

/// Of `candidates`, those that some run of `use` depends on: a non-zero Jacobian column of the
/// log residuals at the input figures, for at least one device model.
std::vector<CalibrationParameter> exercised(const std::vector<CalibrationRun>& runs,
                                            const std::vector<std::size_t>& use, FitSetup setup,
                                            const std::vector<CalibrationParameter>& candidates) {
  setup.parameters = candidates;
  const FitBox box = fit_box(setup);
  const auto residuals = [&](const std::vector<double>& x) { return log_residuals(runs, use, setup, x); };
  const std::vector<bool> nonzero = nonzero_jacobian_columns(residuals, box.start, box.low, box.high);
  std::vector<CalibrationParameter> out;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    bool any = false;
    for (std::size_t m = 0; m < setup.models.size(); ++m) any = any || nonzero[k * setup.models.size() + m];
    if (any) out.push_back(candidates[k]);
  }
  return out;
}

/// Every link kind of the runs' clusters (intra-node links and networks), sorted.
std::set<std::string> link_kinds(const std::vector<CalibrationRun>& runs) {
  std::set<std::string> kinds;
  for (const CalibrationRun& run : runs) {
    for (const plan::Node& node : run.plan.cluster.nodes) kinds.insert({node.intra_link.kind, node.network.kind});
  }
  return kinds;
}

/// The parameters named in `names` (whale::Error for an unknown name, or one that no timed
/// run's step time depends on).
std::vector<CalibrationParameter> named_parameters(const std::vector<std::string>& names,
                                                   Seconds shortest_step_s,
                                                   const std::vector<CalibrationRun>& runs,
                                                   const std::vector<std::size_t>& timed, const FitSetup& setup) {
  std::vector<CalibrationParameter> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (std::find(names.begin(), names.begin() + i, name) != names.begin() + i) {
      throw Error("--parameters", name, "each parameter once, got '" + name + "' twice",
                  "a figure is fitted once per device model; remove the repeat");
    }
    if (name == kMemoryReserveParameter) {
      const bool evidence = std::any_of(runs.begin(), runs.end(), [](const CalibrationRun& r) {
        return r.peak_memory_bytes || r.failed;
      });
      if (!evidence) {
        throw Error("--parameters", name, "a run with a measured peak_memory_gib or failed=true, got none",
                    "the memory reserve is set from measured peaks and failed runs, not from step times");
      }
      continue;
    }
    const std::optional<CalibrationParameter> p = calibration_parameter(name, shortest_step_s);
    if (!p) {
      throw Error("--parameters", name, "a calibration parameter, got '" + name + "'",
                  "choose among gemm_efficiency_scale, step_overhead_us, memory_op_time_scale, "
                  "kernel_overhead_us, layer_overhead_us, micro_batch_overhead_us, memory_reserve_gib, gemm_shape_scale:{small,medium,large}, "
                  "link_bandwidth_scale:KIND, link_latency_us:KIND (KIND: a link kind of the cluster)");
    }
    if (exercised(runs, timed, setup, {*p}).empty()) {
      throw Error("--parameters", name, "a figure that some run's step time depends on, got '" + name +
                  "', which no timed run depends on",
                  "a link figure needs a run that communicates over that link kind, a shape-class "
                  "scale a run with GEMMs of that class (docs/calibrate.md)");
    }
    out.push_back(*p);
  }
  return out;
}

/// Per timed run, its step time predicted by the fit on all the other timed runs (none when
/// there is only one).
std::vector<std::optional<Seconds>> leave_one_out_s(const std::vector<CalibrationRun>& runs,
                                                    const std::vector<std::size_t>& timed,
                                                    const FitSetup& setup) {
  std::vector<std::optional<Seconds>> out(timed.size());
  if (timed.size() < 2) return out;
  for (std::size_t t = 0; t < timed.size(); ++t) {
    std::vector<std::size_t> others;
    for (std::size_t j : timed) if (j != timed[t]) others.push_back(j);
    out[t] = calibrated_step_time_s(runs[timed[t]].plan, fit(runs, others, setup));
  }
  return out;
}

double leave_one_out_mape(const std::vector<CalibrationRun>& runs, const std::vector<std::size_t>& timed,
                          const std::vector<std::optional<Seconds>>& predicted) {
  double sum = 0;
  for (std::size_t t = 0; t < timed.size(); ++t) sum += std::fabs(*predicted[t] / *runs[timed[t]].step_time_s - 1.0);
  return sum / timed.size();
}

/// The candidate parameter lists of the automatic choice (CalibrationOptions::parameters), each
/// of at most `cap` parameters, by size (stable), without repeats.
std::vector<std::vector<CalibrationParameter>> automatic_candidates(
    const std::vector<CalibrationParameter>& base, const std::vector<CalibrationParameter>& shape,
    const std::vector<CalibrationParameter>& link_bandwidth,
    const std::vector<CalibrationParameter>& link_latency, std::size_t cap) {
  using List = std::vector<CalibrationParameter>;
  const auto plus = [](List a, const List& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::vector<List> out;
  const auto add = [&](const List& list) {
    const auto same = [&](const List& other) {
      return std::equal(list.begin(), list.end(), other.begin(), other.end(),
                        [](const CalibrationParameter& a, const CalibrationParameter& b) { return a.name == b.name; });
    };
    if (!list.empty() && list.size() <= cap && std::none_of(out.begin(), out.end(), same)) out.push_back(list);
  };
  for (std::size_t k = 1; k <= std::min<std::size_t>(base.size(), std::min<std::size_t>(5, cap)); ++k) {
    const List first(base.begin(), base.begin() + k);
    add(first);
    if (shape.size() >= 2 && first.front().name == "gemm_efficiency_scale") {
      add(plus(shape, List(first.begin() + 1, first.end())));
    }
    if (!link_bandwidth.empty()) add(plus(first, link_bandwidth));
    if (!link_latency.empty()) add(plus(plus(first, link_bandwidth), link_latency));
  }
  std::stable_sort(out.begin(), out.end(), [](const List& a, const List& b) { return a.size() < b.size(); });
  return out;
}

/// Automatic choice (CalibrationOptions::parameters): of the candidates, the one with the least
/// leave-one-out MAPE (the earlier on a tie within 1e-9); the first with one timed run.
std::vector<CalibrationParameter> automatic_parameters(const std::vector<CalibrationRun>& runs,
                                                       const std::vector<std::size_t>& timed,
                                                       FitSetup setup, Seconds shortest_step_s) {
  const auto exercised_of = [&](const std::vector<CalibrationParameter>& candidates) {
    return exercised(runs, timed, setup, candidates);
  };
  std::vector<CalibrationParameter> bandwidth, latency;
  for (const std::string& kind : link_kinds(runs)) {
    const std::vector<CalibrationParameter> figures = link_parameters(kind);
    bandwidth.push_back(figures[0]);
    latency.push_back(figures[1]);
  }
  const std::size_t models = setup.models.size();
  const std::size_t cap = std::max<std::size_t>(1, (timed.size() - 1) / models);
  const std::vector<std::vector<CalibrationParameter>> candidates = automatic_candidates(
      exercised_of(calibration_parameters(shortest_step_s)), exercised_of(gemm_shape_parameters()),
      exercised_of(bandwidth), exercised_of(latency), cap);
  if (candidates.empty()) return {};
  std::vector<CalibrationParameter> best = candidates.front();
  double best_error = 0;
  for (std::size_t c = 0; c < candidates.size() && timed.size() >= 2; ++c) {
    setup.parameters = candidates[c];
    const double error = leave_one_out_mape(runs, timed, leave_one_out_s(runs, timed, setup));
    if (c == 0 || error < best_error - 1e-9) {
      best = setup.parameters;
      best_error = error;
    }
  }
  return best;
}

/// Per model: the largest predicted peak memory among its devices in `plan` and its capacity.
struct PeakAndCapacity {
  Bytes peak = 0;
  Bytes capacity = 0;
};
std::map<std::string, PeakAndCapacity> predicted_peaks(plan::Plan plan, const Calibrations& calibrations) {
  for (auto& [model, profile] : plan.cluster.profiles) {
    profile.calibration = calibrations.count(model) ? calibrations.at(model) : profile.calibration;
    profile.calibration.memory_reserve_bytes = 0;
  }
  std::map<std::string, PeakAndCapacity> out;
  for (const plan::DeviceEstimate& d : Simulator().evaluate(plan, {}).devices) {
    out[d.model].peak = std::max(out[d.model].peak, d.peak_memory_bytes);
    out[d.model].capacity = d.capacity_bytes;
  }
  return out;
}

std::string gib_text(Bytes bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g GiB", bytes / kBytesPerGiB);
  return text;
}

/// Where a run sits in the runs file, for an error: "line 3" (or the run's name).
std::string run_where(const CalibrationRun& run, const std::string& column = "") {
  if (run.line <= 0) return run.name;
  return "line " + std::to_string(run.line) + (column.empty() ? "" : ", " + column);
}

/// Throws whale::Error for a run whose measured peak exceeds the memory of the plan's largest
/// device: no calibration explains it, and the reserve it asks for would not load.
void check_measured_peaks(const std::vector<CalibrationRun>& runs, const std::string& runs_file,
                          const Calibrations& calibrations) {
  for (const CalibrationRun& run : runs) {
    if (!run.peak_memory_bytes) continue;
    Bytes largest = 0;
    for (const auto& [model, predicted] : predicted_peaks(run.plan, calibrations))
      largest = std::max(largest, predicted.capacity);
    if (*run.peak_memory_bytes > largest) {
      throw Error(runs_file, run_where(run, "column 3 (peak_memory_gib)"),
                  "expected at most the memory of the plan's largest device (" + gib_text(largest) + "), got " +
                      gib_text(*run.peak_memory_bytes),
                  "the largest peak of the run's devices, in GiB; check the unit and the plan");
    }
  }
}

/// Throws whale::Error when the fitted memory reserve of a device model would leave it nothing
/// beside the framework's own reserve: the calibrated profile would not load.
void check_reserves_leave_room(const std::vector<CalibrationRun>& runs, const std::string& runs_file,
                               const Calibrations& calibrations) {
  for (const auto& [model, calibration] : calibrations) {
    for (const CalibrationRun& run : runs) {
      const auto it = run.plan.cluster.profiles.find(model);
      if (it == run.plan.cluster.profiles.end()) continue;
      const plan::DeviceProfile& profile = it->second;
      const Bytes room = profile.memory_bytes - profile.framework_memory.reserve_bytes;
      if (calibration.memory_reserve_bytes >= room) {
        throw Error(runs_file, model,
                    "runs that a memory reserve below " + gib_text(room) + " explains (" + model + ": " +
                        gib_text(profile.memory_bytes) + " less its framework reserve), got runs that need " +
                        gib_text(calibration.memory_reserve_bytes),
                    "whale predicts a failed run to fit with room to spare, or a peak far above the "
                    "prediction: did it fail for another reason, and is this the plan that was run?");
      }
      break;
    }
  }
}

/// The warnings of CalibrationResult::warnings.
std::vector<std::string> fit_warnings(const CalibrationResult& result, const FitSetup& setup) {
  std::vector<std::string> out;
  for (const CalibrationParameter& p : setup.parameters) {
    for (const std::string& model : setup.models) {
      const double value = calibration_value(result.calibrations.at(model), p);
      const bool at_high = value >= p.high * (1 - 1e-9);
      const bool at_low = p.log_scale && value <= p.low * (1 + 1e-9);
      if (!at_high && !at_low) continue;
      char text[256];
      std::snprintf(text, sizeof text, "%s of %s fitted at the %s bound of its range [%g, %g]", p.name.c_str(),
                    model.c_str(), at_high ? "upper" : "lower", p.low, p.high);
      out.push_back(std::string(text) + ": the runs ask for more than the figure explains; check the measured "
                    "step times and their unit");
    }
  }
  const std::size_t figures = setup.parameters.size() * setup.models.size();
  if (figures > 0 && figures >= result.runs.size()) {
    out.push_back(std::to_string(figures) + " figure(s) fitted to " + std::to_string(result.runs.size()) +
                  " timed run(s): the calibrated error is 0 or near it by construction and says nothing; "
                  "measure more runs or fit fewer --parameters");
  }
  if (result.calibrated_mape > result.uncalibrated_mape) {
    out.push_back("the calibrated error is above the uncalibrated one: the fit follows the log step times, "
                  "some runs disagree with the others");
  }
  return out;
}

double mean_abs_relative_error(const std::vector<RunPrediction>& runs, Seconds RunPrediction::*field) {
  double sum = 0;
  int count = 0;
  for (const RunPrediction& r : runs) {
    sum += std::fabs(r.*field / r.measured_s - 1.0);
    ++count;
  }
  return count ? sum / count : 0.0;
}

/// The step-time fit on the timed runs: parameters, fit, per-run predictions and errors.
void fit_step_times(const std::vector<CalibrationRun>& runs, const std::vector<std::size_t>& timed,
                    const CalibrationOptions& options, Seconds shortest_step_s, FitSetup setup,
                    CalibrationResult* out) {
  CalibrationResult& result = *out;
  setup.parameters = options.parameters.empty()
                         ? automatic_parameters(runs, timed, setup, shortest_step_s)
                         : named_parameters(options.parameters, shortest_step_s, runs, timed, setup);
  for (const CalibrationParameter& p : setup.parameters) result.fitted.push_back(p.name);
  result.calibrations = fit(runs, timed, setup);
  const std::vector<std::optional<Seconds>> left_out = leave_one_out_s(runs, timed, setup);
  for (std::size_t t = 0; t < timed.size(); ++t) {
    const CalibrationRun& run = runs[timed[t]];
    RunPrediction p;
    p.name = run.name;
    p.measured_s = *run.step_time_s;
    p.uncalibrated_s = calibrated_step_time_s(run.plan, setup.start);
    p.calibrated_s = calibrated_step_time_s(run.plan, result.calibrations);
    p.leave_one_out_s = left_out[t];
    result.runs.push_back(p);
    result.rms_log_residual += std::pow(std::log(p.calibrated_s / p.measured_s), 2);
  }
  result.rms_log_residual = std::sqrt(result.rms_log_residual / timed.size());
  result.uncalibrated_mape = mean_abs_relative_error(result.runs, &RunPrediction::uncalibrated_s);
  result.calibrated_mape = mean_abs_relative_error(result.runs, &RunPrediction::calibrated_s);
  if (timed.size() >= 2) result.leave_one_out_mape = leave_one_out_mape(runs, timed, left_out);
  result.warnings = fit_warnings(result, setup);
}

}  // namespace

double calibration_value(const plan::ProfileCalibration& calibration, const CalibrationParameter& parameter) {
  if (!parameter.link_field) return calibration.*parameter.field;
  const auto it = calibration.links.find(parameter.link_kind);
  return it == calibration.links.end() ? plan::LinkCalibration{}.*parameter.link_field
                                       : it->second.*parameter.link_field;
}

double& calibration_value(plan::ProfileCalibration& calibration, const CalibrationParameter& parameter) {
  if (!parameter.link_field) return calibration.*parameter.field;
  return calibration.links[parameter.link_kind].*parameter.link_field;
}

std::vector<CalibrationParameter> gemm_shape_parameters() {
  using C = plan::ProfileCalibration;
  return {{"gemm_shape_scale:small", 1.0 / kMaxScale, kMaxScale, true, &C::gemm_small_scale, "", nullptr},
          {"gemm_shape_scale:medium", 1.0 / kMaxScale, kMaxScale, true, &C::gemm_medium_scale, "", nullptr},
          {"gemm_shape_scale:large", 1.0 / kMaxScale, kMaxScale, true, &C::gemm_large_scale, "", nullptr}};
}

std::vector<CalibrationParameter> link_parameters(const std::string& kind) {
  using L = plan::LinkCalibration;
  return {{"link_bandwidth_scale:" + kind, kMinLinkBandwidthScale, kMaxLinkBandwidthScale, true, nullptr, kind,
           &L::bandwidth_scale},
          {"link_latency_us:" + kind, 0.0, kMaxLinkLatencyS, false, nullptr, kind, &L::latency_s}};
}

std::optional<CalibrationParameter> calibration_parameter(const std::string& name, Seconds shortest_step_s) {
  std::vector<CalibrationParameter> all = calibration_parameters(shortest_step_s);
  const std::vector<CalibrationParameter> shape = gemm_shape_parameters();
  all.insert(all.end(), shape.begin(), shape.end());
  // Fitted only when named: the automatic choice keeps to the figures above.
  all.push_back({"micro_batch_overhead_us", 0.0, 1.0, false, &plan::ProfileCalibration::micro_batch_overhead_s, "",
                 nullptr});
  const std::size_t colon = name.find(':');
  if (colon != std::string::npos && colon + 1 < name.size() && name.compare(0, colon, "gemm_shape_scale") != 0) {
    const std::vector<CalibrationParameter> link = link_parameters(name.substr(colon + 1));
    all.insert(all.end(), link.begin(), link.end());
  }
  for (const CalibrationParameter& p : all) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

std::vector<CalibrationParameter> calibration_parameters(Seconds shortest_step_s) {
  using C = plan::ProfileCalibration;
  return {{"gemm_efficiency_scale", 1.0 / kMaxScale, kMaxScale, true, &C::gemm_efficiency_scale, "", nullptr},
          {"step_overhead_us", 0.0, shortest_step_s, false, &C::step_overhead_s, "", nullptr},
          {"memory_op_time_scale", 1.0 / kMaxScale, kMaxScale, true, &C::memory_op_time_scale, "", nullptr},
          {"kernel_overhead_us", 0.0, 1e-3, false, &C::kernel_overhead_s, "", nullptr},
          {"layer_overhead_us", 0.0, 0.1, false, &C::layer_overhead_s, "", nullptr}};
}

Seconds calibrated_step_time_s(plan::Plan plan, const Calibrations& calibrations) {
  for (auto& [model, profile] : plan.cluster.profiles) {
    const auto it = calibrations.find(model);
    if (it != calibrations.end()) profile.calibration = it->second;
  }
  return Simulator().evaluate(plan, {}).step_time_s;
}

CalibrationResult calibrate(const std::vector<CalibrationRun>& runs, const CalibrationOptions& options) {
  std::vector<std::size_t> timed;
  std::set<std::string> models;
  FitSetup setup;
  Seconds shortest_step_s = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& [model, profile] : runs[i].plan.cluster.profiles) setup.start.emplace(model, profile.calibration);
    if (!runs[i].step_time_s) continue;
    timed.push_back(i);
    const std::set<std::string> used = models_of(runs[i].plan);
    models.insert(used.begin(), used.end());
    const Seconds step = *runs[i].step_time_s;
    shortest_step_s = timed.size() == 1 ? step : std::min(shortest_step_s, step);
  }
  CalibrationResult result;
  check_measured_peaks(runs, options.runs_file, setup.start);
  result.memory = fit_memory(runs);
  result.memory_runs = static_cast<int>(result.memory.runs.size());
  if (timed.empty() && result.memory.runs.empty()) {
    throw Error(options.runs_file, "step_time_s", "at least one run with a measured step time or peak memory, got none",
                "give step_time_s, peak_memory_gib or failed=true per run");
  }
  setup.models.assign(models.begin(), models.end());
  result.device_models = setup.models;
  result.calibrations = setup.start;
  if (!timed.empty()) fit_step_times(runs, timed, options, shortest_step_s, setup, &result);
  for (const auto& [model, figures] : result.memory.figures) {
    plan::ProfileCalibration& c = result.calibrations[model];
    c.activation_memory_scale = figures.activation_scale;
    c.memory_reserve_bytes = figures.calibrated_reserve_bytes;
  }
  check_reserves_leave_room(runs, options.runs_file, result.calibrations);
  for (auto& [model, calibration] : result.calibrations) {
    if (!models.count(model) && !result.memory.figures.count(model)) continue;
    calibration.source = calibration_source(result, runs);
    for (const CalibrationRun& run : runs) {
      const auto it = run.plan.cluster.profiles.find(model);
      if (it == run.plan.cluster.profiles.end() || result.profiles.count(model)) continue;
      plan::DeviceProfile& profile = result.profiles[model] = it->second;
      profile.calibration = calibration;
      if (result.memory.figures.count(model) &&
          profile.framework_memory.allocator_slack_fraction != result.memory.figures.at(model).slack_fraction) {
        profile.framework_memory.allocator_slack_fraction = result.memory.figures.at(model).slack_fraction;
        profile.framework_memory.source += "; allocator_slack_fraction fitted by whale-calibrate (calibration.source)";
      }
    }
  }
  return result;
}

}  // namespace whale::sim

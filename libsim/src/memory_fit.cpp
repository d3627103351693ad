// File: memory_fit.cpp
// The memory fit of memory_fit.h: peaks linear in the activation scale and the slack, fitted by
// bounded least squares with a hinge for runs that ran, the reserve raised for runs that ran
// out of memory, then leave-one-out.
#include "whale/sim/memory_fit.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "whale/plan/schedule_program.h"
#include "whale/sim/bounded_least_squares.h"
#include "whale/sim/calibrate.h"
#include "whale/sim/memory_model.h"

namespace whale::sim {
namespace {

constexpr double kMinActivationScale = 0.1;
constexpr double kMaxActivationScale = 4.0;
constexpr double kMaxSlackFraction = 1.0;
constexpr double kConstraintWeight = 10.0;       // a hinge counts as ten peaks
constexpr Bytes kFailMarginBytes = 1024.0 * 1024.0;  // a failed run is predicted 1 MiB over

/// What the fit reads of one run.
struct RunTerms {
  std::vector<DeviceMemoryTerms> devices;
  std::optional<Bytes> measured;
  bool failed = false;
  bool ran = false;  // measured a step time or a peak, and did not fail
};

Bytes run_peak(const RunTerms& run, const MemoryFiguresByModel& figures) {
  Bytes peak = 0;
  for (const DeviceMemoryTerms& d : run.devices) peak = std::max(peak, predicted_device_peak(d, figures));
  return peak;
}

/// The largest peak / capacity of the run's devices (> 1: predicted not to fit).
double fill_ratio(const RunTerms& run, const MemoryFiguresByModel& figures) {
  double ratio = 0;
  for (const DeviceMemoryTerms& d : run.devices) {
    if (d.capacity_bytes > 0) ratio = std::max(ratio, predicted_device_peak(d, figures) / d.capacity_bytes);
  }
  return ratio;
}

/// The fitted parameters: log activation scale per model, then (when `slack`) slack per model.
struct FitLayout {
  std::vector<std::string> models;
  bool slack = false;
  MemoryFiguresByModel start;
};

MemoryFiguresByModel figures_at(const FitLayout& layout, const std::vector<double>& x) {
  MemoryFiguresByModel out = layout.start;
  const std::size_t n = layout.models.size();
  for (std::size_t m = 0; m < n; ++m) {
    out[layout.models[m]].activation_scale = std::exp(x[m]);
    if (layout.slack) out[layout.models[m]].slack_fraction = x[n + m];
  }
  return out;
}

std::vector<double> residuals(const std::vector<RunTerms>& runs, const std::vector<std::size_t>& use,
                              const MemoryFiguresByModel& figures) {
  std::vector<double> r;
  for (std::size_t i : use) {
    const RunTerms& run = runs[i];
    if (run.measured) r.push_back(std::log(run_peak(run, figures) / *run.measured));
    // A run that ran must fit. (A failed run is not a residual: far from capacity its hinge
    // would drag the scale to a bound against every peak; the reserve takes it, in fit_on.)
    const double fill = fill_ratio(run, figures);
    if (run.ran && fill > 0) r.push_back(kConstraintWeight * std::max(0.0, std::log(fill)));
  }
  return r;
}

/// The fit on runs `use`, then the reserve raised for each failed run of `use` still fitting.
MemoryFiguresByModel fit_on(const std::vector<RunTerms>& runs, const std::vector<std::size_t>& use,
                            const FitLayout& layout) {
  std::vector<double> start, low, high;
  for (const std::string& model : layout.models) {
    start.push_back(std::log(layout.start.at(model).activation_scale));
    low.push_back(std::log(kMinActivationScale));
    high.push_back(std::log(kMaxActivationScale));
  }
  if (layout.slack) {
    for (const std::string& model : layout.models) {
      start.push_back(layout.start.at(model).slack_fraction);
      low.push_back(0.0);
      high.push_back(kMaxSlackFraction);
    }
  }
  MemoryFiguresByModel figures = layout.start;
  if (!layout.models.empty()) {
    const auto r = [&](const std::vector<double>& x) { return residuals(runs, use, figures_at(layout, x)); };
    figures = figures_at(layout, solve_bounded_least_squares(r, start, low, high).x);
  }
  for (std::size_t i : use) {
    const RunTerms& run = runs[i];
    if (!run.failed || fill_ratio(run, figures) > 1) continue;
    // Per model, the least reserve that puts its largest device over capacity.
    std::map<std::string, Bytes> needed;
    for (const DeviceMemoryTerms& d : run.devices) {
      const Bytes gap = d.capacity_bytes - predicted_device_peak(d, figures) + kFailMarginBytes;
      auto it = needed.find(d.model);
      if (it == needed.end() || gap < it->second) needed[d.model] = gap;
    }
    for (const auto& [model, gap] : needed) {
      Bytes& reserve = figures[model].calibrated_reserve_bytes;
      reserve = std::max(reserve, reserve + gap);
    }
  }
  return figures;
}

double mape(const std::vector<MemoryRunPrediction>& runs, Bytes MemoryRunPrediction::*field) {
  double sum = 0;
  int count = 0;
  for (const MemoryRunPrediction& r : runs) {
    if (!r.measured_bytes) continue;
    sum += std::fabs(r.*field / *r.measured_bytes - 1.0);
    ++count;
  }
  return count ? sum / count : 0.0;
}

}  // namespace

std::vector<DeviceMemoryTerms> device_memory_terms(const plan::Plan& input) {
  plan::Plan plan = input;
  for (auto& [model, profile] : plan.cluster.profiles) profile.calibration.activation_memory_scale = 1.0;
  const plan::ScheduleProgram program = plan::generate_schedule(plan);
  std::vector<DeviceMemoryTerms> out;
  for (const plan::GroupProgram& group : program.groups) {
    const plan::Stage& stage = plan.stages.at(group.stages.front());
    for (int replica = 0; replica < stage.dp(); ++replica) {
      const MemoryBreakdown memory = replica_memory(plan, group, replica);
      for (int id : stage.replica_devices(replica)) {
        const plan::DeviceProfile& profile = plan.cluster.profile_of(id);
        DeviceMemoryTerms d;
        d.model = profile.name;
        d.fixed_tensor_bytes = memory.tensor_bytes() - memory.activations_bytes;
        d.activation_bytes = memory.activations_bytes;
        d.reserve_bytes = memory.framework_reserve_bytes;
        d.capacity_bytes = profile.memory_bytes;
        out.push_back(d);
      }
    }
  }
  return out;
}

Bytes predicted_device_peak(const DeviceMemoryTerms& device, const MemoryFiguresByModel& figures) {
  const auto it = figures.find(device.model);
  const MemoryFigures f = it == figures.end() ? MemoryFigures{} : it->second;
  return (device.fixed_tensor_bytes + f.activation_scale * device.activation_bytes) * (1 + f.slack_fraction) +
         device.reserve_bytes + f.calibrated_reserve_bytes;
}

MemoryFit fit_memory(const std::vector<CalibrationRun>& input) {
  std::vector<RunTerms> runs;
  MemoryFiguresByModel given;  // the input profiles' figures, with their calibrated reserve
  FitLayout layout;
  std::set<std::string> models;
  std::size_t measured = 0;
  for (const CalibrationRun& run : input) {
    RunTerms terms;
    terms.devices = device_memory_terms(run.plan);
    terms.measured = run.peak_memory_bytes;
    terms.failed = run.failed;
    terms.ran = !run.failed && (run.step_time_s || run.peak_memory_bytes);
    for (const auto& [model, profile] : run.plan.cluster.profiles) {
      MemoryFigures f{profile.calibration.activation_memory_scale,
                      profile.framework_memory.allocator_slack_fraction, profile.calibration.memory_reserve_bytes};
      given.emplace(model, f);
      f.calibrated_reserve_bytes = 0;  // refitted
      layout.start.emplace(model, f);
    }
    if (run.peak_memory_bytes || run.failed) {
      for (const DeviceMemoryTerms& d : terms.devices) models.insert(d.model);
    }
    if (run.peak_memory_bytes) ++measured;
    runs.push_back(std::move(terms));
  }
  MemoryFit out;
  if (models.empty()) return out;
  // Scales only where a peak was measured; the slack too with two peaks per model.
  if (measured > 0) layout.models.assign(models.begin(), models.end());
  layout.slack = measured >= 2 * models.size();
  if (!layout.models.empty()) out.fitted.push_back("activation_memory_scale");
  if (layout.slack) out.fitted.push_back("allocator_slack_fraction");
  std::vector<std::size_t> all(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) all[i] = i;
  const MemoryFiguresByModel fitted = fit_on(runs, all, layout);
  for (const std::string& model : models) out.figures[model] = fitted.at(model);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunTerms& run = runs[i];
    if (!run.measured && !run.failed) continue;
    MemoryRunPrediction p;
    p.name = input[i].name;
    p.measured_bytes = run.measured;
    p.failed = run.failed;
    p.uncalibrated_bytes = run_peak(run, given);
    p.calibrated_bytes = run_peak(run, fitted);
    p.calibrated_fits = fill_ratio(run, fitted) <= 1;
    if (run.measured && measured >= 2) {
      std::vector<std::size_t> others;
      for (std::size_t j : all) if (j != i) others.push_back(j);
      p.leave_one_out_bytes = run_peak(run, fit_on(runs, others, layout));
    }
    out.runs.push_back(p);
  }
  out.uncalibrated_mape = mape(out.runs, &MemoryRunPrediction::uncalibrated_bytes);
  out.calibrated_mape = mape(out.runs, &MemoryRunPrediction::calibrated_bytes);
  if (measured >= 2) {
    double sum = 0;
    for (const MemoryRunPrediction& r : out.runs) {
      if (r.leave_one_out_bytes) sum += std::fabs(*r.leave_one_out_bytes / *r.measured_bytes - 1.0);
    }
    out.leave_one_out_mape = sum / measured;
  }
  return out;
}

}  // namespace whale::sim

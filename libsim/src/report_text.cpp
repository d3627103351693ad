// File: report_text.cpp
// The text report of an estimate: a summary, the time breakdown and a per-stage table.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>

#include "whale/plan/objective.h"
#include "whale/plan/stage_text.h"
#include "whale/plan/units.h"
#include "whale/sim/measured_layer_time.h"
#include "whale/sim/report.h"

namespace whale::sim {
namespace {

std::string printf_string(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

std::string breakdown_line(const char* label, Seconds part_s, Seconds step_s) {
  return printf_string("  %-16s %12.6f s  %5.1f%%\n", label, part_s,
                       step_s > 0 ? 100.0 * part_s / step_s : 0.0);
}

/// "layer times  3 of 8 measured ..." when a profile of the plan carries layer_times; else empty.
std::string measured_layers_line(const plan::Plan& plan) {
  bool any = false;
  for (const auto& [model, profile] : plan.cluster.profiles) any = any || !profile.layer_times.empty();
  if (!any) return "";
  int total = 0;
  const int measured = measured_layer_count(plan, &total);
  return printf_string("layer times: %d of %d (stage replica, layer) pairs from measurements, "
                       "the rest from GEMM curves\n", measured, total);
}

}  // namespace

std::string format_text_report(const plan::Plan& plan, const plan::Estimate& est) {
  std::string out;
  out += "plan      " + (plan.source_file.empty() ? std::string("(built in code)") : plan.source_file) + "\n";
  out += "model     " + plan.model.name + printf_string(" (%.3g B parameters)\n",
                                                       plan.model.parameter_count() / 1e9);
  out += "cluster   " + plan.cluster.name + printf_string(" (%zu devices)\n", plan.cluster.devices.size());
  out += printf_string("schedule  %s, chunks %d, %d micro-batches of %d samples, %s\n",
                       plan::to_string(plan.schedule.kind), plan.schedule.chunks,
                       plan.micro_batches, plan.micro_batch_size, plan::to_string(plan.precision));
  // Device models whose GEMMs run in another precision than the plan's (TF32, fallbacks).
  for (const std::string& note : plan::gemm_precision_notes(plan)) out += "precision " + note + "\n";
  out += "\n";
  out += printf_string("step time        %12.6f s\n", est.step_time_s);
  out += printf_string("samples/s        %12.3f\n", est.samples_per_s);
  out += printf_string("tokens/s         %12.1f\n", est.tokens_per_s);
  const plan::PlanCost cost = plan::plan_cost(plan, est);   // where the cluster has prices
  if (cost.priced) {
    out += printf_string("USD per hour     %12.2f  (the devices the plan uses)\n", cost.usd_per_hour);
    out += printf_string("USD per 1M tokens%12.4f\n", cost.usd_per_million_tokens);
  }
  out += printf_string("MFU              %12.2f %%\n", 100.0 * est.mfu);
  out += printf_string("bubble fraction  %12.2f %%\n", 100.0 * est.bubble_fraction);
  out += printf_string("fits in memory   %12s\n\n", est.fits ? "yes" : "NO");
  const plan::TimeBreakdown& b = est.breakdown;
  out += "time per device (average), share of the step:\n";
  out += breakdown_line("compute", b.compute_s, est.step_time_s);
  out += breakdown_line("recompute", b.recompute_s, est.step_time_s);
  out += breakdown_line("exposed comm", b.exposed_comm_s, est.step_time_s);
  out += breakdown_line("idle (bubbles)", b.idle_s, est.step_time_s);
  out += breakdown_line("tp comm (all)", b.tp_comm_s, est.step_time_s);
  out += breakdown_line("pp comm (all)", b.pp_comm_s, est.step_time_s);
  out += breakdown_line("dp comm (all)", b.dp_comm_s, est.step_time_s);
  out += measured_layers_line(plan);

  std::map<int, const plan::DeviceEstimate*> by_id;
  for (const plan::DeviceEstimate& d : est.devices) by_id[d.id] = &d;
  out += "\nstage  layers      devices              dp x tp  shares           recompute  "
         "memory GiB (peak/capacity)  model\n";
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const plan::Stage& st = plan.stages[s];
    const plan::DeviceEstimate* fullest = nullptr;
    for (int id : st.devices) {
      const plan::DeviceEstimate* d = by_id.at(id);
      if (!fullest || d->peak_memory_bytes / d->capacity_bytes >
                          fullest->peak_memory_bytes / fullest->capacity_bytes) {
        fullest = d;
      }
    }
    std::string devices = plan::format_device_list(st.devices);
    std::string shares = plan::shares_text(st.shares);
    if (devices.size() > 20) devices = devices.substr(0, 17) + "...";
    if (shares.size() > 16) shares = shares.substr(0, 13) + "...";
    const std::string tp = plan::stage_tp_text(st);
    out += printf_string("%5zu  %4d-%-4d  %-20s %3d x %-3s %-16s %-9s  %8.2f / %-8.2f %s  %s\n", s,
                         st.first_layer, st.end_layer - 1, devices.c_str(), st.dp(), tp.c_str(),
                         shares.c_str(), plan::to_string(st.recompute),
                         fullest->peak_memory_bytes / kBytesPerGiB,
                         fullest->capacity_bytes / kBytesPerGiB,
                         fullest->peak_memory_bytes <= fullest->capacity_bytes ? "  " : "!!",
                         plan::stage_device_models(plan, st).c_str());
  }
  out += out_of_memory_text(plan, est);
  return out;
}

std::string out_of_memory_text(const plan::Plan& plan, const plan::Estimate& est) {
  std::vector<const plan::DeviceEstimate*> over;
  for (const plan::DeviceEstimate& d : est.devices) {
    if (d.peak_memory_bytes > d.capacity_bytes) over.push_back(&d);
  }
  if (over.empty()) return "";
  std::string out = printf_string("\nOUT OF MEMORY on %zu of %zu devices (predicted peak above capacity):\n",
                                  over.size(), est.devices.size());
  constexpr std::size_t kListed = 8;
  for (std::size_t i = 0; i < over.size() && i < kListed; ++i) {
    const plan::DeviceEstimate& d = *over[i];
    out += printf_string("  device %d %s: %.2f GiB of %.2f GiB (tensors %.2f GiB, framework %.2f GiB)\n",
                         d.id, d.model.c_str(), d.peak_memory_bytes / kBytesPerGiB,
                         d.capacity_bytes / kBytesPerGiB, d.tensor_memory_bytes / kBytesPerGiB,
                         (d.peak_memory_bytes - d.tensor_memory_bytes) / kBytesPerGiB);
  }
  if (over.size() > kListed) out += printf_string("  ... and %zu more\n", over.size() - kListed);
  // Where each overflowing model's framework figures come from.
  std::set<std::string> models;
  for (const plan::DeviceEstimate* d : over) models.insert(d->model);
  for (const std::string& model : models) {
    const plan::DeviceProfile& profile = plan.cluster.profiles.at(model);
    const plan::FrameworkMemory& f = profile.framework_memory;
    out += printf_string("  %s: framework reserve %.2f GiB + allocator slack %.0f%% (%s)",
                         model.c_str(), f.reserve_bytes / kBytesPerGiB,
                         100.0 * f.allocator_slack_fraction, f.source.c_str());
    if (profile.calibration.memory_reserve_bytes > 0) {
      out += printf_string(" + calibrated reserve %.2f GiB",
                           profile.calibration.memory_reserve_bytes / kBytesPerGiB);
    }
    out += printf_string("; %s attention", plan::to_string(f.attention));
    if (profile.calibration.activation_memory_scale != 1.0) {
      out += printf_string(", activations x %.3g (calibrated)", profile.calibration.activation_memory_scale);
    }
    out += "\n";
  }
  return out;
}

}  // namespace whale::sim

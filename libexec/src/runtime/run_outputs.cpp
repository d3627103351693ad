// File: run_outputs.cpp
// Log lines, metrics records, the gathered measured trace and the full-parameter dump.
#include "runtime/run_outputs.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <sstream>

#include "whale/exec/profile/profile_statistics.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/check.h"
#include "whale/plan/layer_times.h"
#include "whale/plan/model.h"
#include "whale/plan/error.h"

namespace whale::exec {

std::string format_log_line(const StepRecord& r, int64_t steps) {
  char line[240];
  int n = std::snprintf(line, sizeof(line),
                        "step %lld/%lld  loss %.6f  step_time %.4f s  tokens/s %.0f",
                        static_cast<long long>(r.step), static_cast<long long>(steps), r.loss,
                        r.step_time_s, r.tokens_per_s);
  if (r.skipped_steps >= 0 && n > 0 && n < static_cast<int>(sizeof(line)))
    n += std::snprintf(line + n, sizeof(line) - n, "  skipped %lld  loss_scale %.0f",
                       static_cast<long long>(r.skipped_steps), r.loss_scale);
  if (r.grad_norm >= 0 && n > 0 && n < static_cast<int>(sizeof(line)))
    std::snprintf(line + n, sizeof(line) - n, "  grad_norm %.4g", r.grad_norm);
  return line;
}

std::string format_metrics_line(const StepRecord& r) {
  char line[400];
  int n = std::snprintf(line, sizeof(line),
                        "{\"step\":%lld,\"loss\":%.17g,\"step_time_s\":%.6g,\"tokens_per_s\":%.6g",
                        static_cast<long long>(r.step), r.loss, r.step_time_s, r.tokens_per_s);
  if (r.skipped_steps >= 0 && n > 0 && n < static_cast<int>(sizeof(line)))
    n += std::snprintf(line + n, sizeof(line) - n, ",\"skipped_steps\":%lld,\"loss_scale\":%.17g",
                       static_cast<long long>(r.skipped_steps), r.loss_scale);
  if (r.grad_norm >= 0 && n > 0 && n < static_cast<int>(sizeof(line)))
    n += std::snprintf(line + n, sizeof(line) - n, ",\"grad_norm\":%.17g", r.grad_norm);
  if (n > 0 && n < static_cast<int>(sizeof(line)))
    std::snprintf(line + n, sizeof(line) - n, ",\"device\":\"%s\",\"peak_memory_bytes\":%lld",
                  r.device.c_str(), static_cast<long long>(r.peak_memory_bytes));
  return std::string(line) + "}";
}

std::string gather_peak_memory_line(std::size_t peak_memory_bytes, PeerTransport& transport) {
  const std::vector<std::string> peaks = transport.gather_to_root(std::to_string(peak_memory_bytes));
  if (peaks.empty()) return "";
  std::string line = "whale-run: peak memory per rank, MiB:";
  for (const std::string& bytes : peaks) {
    char mib[32];
    std::snprintf(mib, sizeof(mib), " %.2f", std::stod(bytes) / kBytesPerMiB);
    line += mib;
  }
  return line;
}

void write_measured_trace(const std::string& path, const plan::Plan& plan,
                          const std::vector<plan::TimelineEvent>& mine,
                          PeerTransport& transport) {
  // One event per line: device stage micro_batch start duration lane name (name last: spaces).
  std::ostringstream text;
  text.precision(17);
  for (const plan::TimelineEvent& e : mine)
    text << e.device << ' ' << e.stage << ' ' << e.micro_batch << ' ' << e.start_s << ' '
         << e.duration_s << ' ' << e.lane << ' ' << e.name << '\n';
  const std::vector<std::string> parts = transport.gather_to_root(text.str());
  if (transport.rank() != 0) return;
  std::vector<plan::TimelineEvent> events;
  for (const std::string& part : parts) {
    std::istringstream in(part);
    plan::TimelineEvent e;
    while (in >> e.device >> e.stage >> e.micro_batch >> e.start_s >> e.duration_s >> e.lane) {
      std::getline(in >> std::ws, e.name);
      events.push_back(e);
    }
  }
  std::vector<std::string> labels;
  for (const plan::Device& d : plan.cluster.devices)
    labels.push_back("dev " + std::to_string(d.id) + " " + d.model);
  plan::write_chrome_trace_file(path, events, labels);
}

void write_layer_times(const std::string& path, const std::vector<LayerTimeSample>& mine,
                       PeerTransport& transport) {
  // One sample per line: step device_model kind tp micro_batch backward seconds.
  std::ostringstream text;
  text.precision(17);
  for (const LayerTimeSample& t : mine)
    text << t.step << ' ' << t.device_model << ' ' << plan::to_string(t.kind) << ' ' << t.tp << ' '
         << t.micro_batch << ' ' << t.backward << ' ' << t.seconds << '\n';
  const std::vector<std::string> parts = transport.gather_to_root(text.str());
  if (transport.rank() != 0) return;
  std::vector<LayerTimeSample> samples;
  for (const std::string& part : parts) {
    std::istringstream in(part);
    LayerTimeSample t;
    std::string kind;
    while (in >> t.step >> t.device_model >> kind >> t.tp >> t.micro_batch >> t.backward >> t.seconds) {
      const bool known = plan::parse_layer_kind(kind, &t.kind);  // written by to_string above
      WHALE_CHECK(known, "write_layer_times: layer kind '" + kind + "'");
      samples.push_back(t);
    }
  }
  int64_t first_step = 0, last_step = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    first_step = i == 0 ? samples[i].step : std::min(first_step, samples[i].step);
    last_step = i == 0 ? samples[i].step : std::max(last_step, samples[i].step);
  }
  // By (device model, kind, tp, micro-batch): forward and backward seconds.
  std::map<std::tuple<std::string, std::string, int, int>, std::pair<std::vector<double>, std::vector<double>>> shapes;
  for (const LayerTimeSample& t : samples) {
    if (t.step == first_step && last_step > first_step) continue;  // the first step warms up
    auto& times = shapes[{t.device_model, plan::to_string(t.kind), t.tp, t.micro_batch}];
    (t.backward ? times.second : times.first).push_back(t.seconds);
  }
  // A file of the header alone would be refused by whale-calibrate: say why here instead.
  const bool any = std::any_of(shapes.begin(), shapes.end(), [](const auto& shape) {
    return !shape.second.first.empty() && !shape.second.second.empty();
  });
  if (!any)
    throw Error(path, "--layer-times", "at least one layer timed forward and backward, got none",
                "train at least one step (--steps 1 or more)");
  AtomicFile out(path, "--layer-times");
  out.write(std::string(plan::kLayerTimesCsvHeader) + "\n");
  char row[64];
  for (const auto& [shape, times] : shapes) {
    if (times.first.empty() || times.second.empty()) continue;
    std::snprintf(row, sizeof(row), ",%.9g,%.9g\n", median(times.first), median(times.second));
    out.write(std::get<0>(shape) + "," + std::get<1>(shape) + "," + std::to_string(std::get<2>(shape)) + "," +
              std::to_string(std::get<3>(shape)) + row);
  }
  out.commit();
}

void write_parameters(const std::string& path, const std::vector<FullParameter>& parameters) {
  AtomicFile out(path, "--dump-params");
  char number[32];
  for (const FullParameter& p : parameters) {
    out.write(p.name + ' ' + std::to_string(p.values.size()) + '\n');
    std::string values;
    for (float v : p.values) {
      std::snprintf(number, sizeof(number), "%.9g\n", v);
      values += number;
    }
    out.write(values);
  }
  out.commit();
}

}  // namespace whale::exec

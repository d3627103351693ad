// File: chrome_trace_events.cpp
// Reads a PyTorch profiler Chrome trace into CPU events and GPU kernel times
// (chrome_trace_events.h). JSON is YAML flow syntax: the strict YAML reader names the file and
// the event in every error.
#include "chrome_trace_events.h"

#include <algorithm>
#include <set>

#include "yaml_reader.h"

namespace whale::plan {
namespace {

// Containment tolerance: Kineto writes times in microseconds with three decimals, so an op
// that ends with its range may end a nanosecond after it.
constexpr double kEdgeUs = 1e-3;

bool is_gpu_category(const std::string& cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" ||
         cat == "gpu_user_annotation";
}

long long arg_integer(const YamlField& args, const std::string& key) {
  if (!args.has(key)) return -1;
  const double value = args.get(key).number();
  return value >= 0 ? static_cast<long long>(value) : -1;
}

}  // namespace

std::vector<const TraceEvent*> ChromeTrace::within(const std::string& lane, double start_us,
                                                   double end_us) const {
  std::vector<const TraceEvent*> out;
  const auto it = lanes.find(lane);
  if (it == lanes.end()) return out;
  const auto first = events.begin() + static_cast<std::ptrdiff_t>(it->second.first);
  const auto last = events.begin() + static_cast<std::ptrdiff_t>(it->second.second);
  auto e = std::lower_bound(first, last, start_us - kEdgeUs,
                            [](const TraceEvent& ev, double t) { return ev.start_us < t; });
  for (; e != last && e->start_us <= end_us + kEdgeUs; ++e) {
    if (e->end_us <= end_us + kEdgeUs) out.push_back(&*e);
  }
  return out;
}

double ChromeTrace::measured_us(const std::string& lane, double start_us, double end_us) const {
  if (!kernel_us_by_correlation.empty()) {
    std::set<long long> launched;
    for (const TraceEvent* e : within(lane, start_us, end_us)) {
      if (e->correlation >= 0) launched.insert(e->correlation);
    }
    double gpu_us = 0;
    for (long long c : launched) {
      const auto k = kernel_us_by_correlation.find(c);
      if (k != kernel_us_by_correlation.end()) gpu_us += k->second;
    }
    if (gpu_us > 0) return gpu_us;
  }
  return end_us - start_us;
}

ChromeTrace load_chrome_trace(const std::string& path) {
  const YamlField root = load_yaml_file(path);
  const YamlField list = root.is_map() ? root.get("traceEvents") : root;
  if (!list.is_sequence()) {
    list.fail("a list of trace events", "export it with torch.profiler's prof.export_chrome_trace(path)");
  }
  ChromeTrace trace;
  trace.path = path;
  const std::vector<YamlField> events = list.elements();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const YamlField& e = events[i];
    if (!e.is_map() || !e.has("ph") || e.get("ph").text() != "X") continue;
    const std::string cat = e.text_or("cat", "");
    const double start_us = e.get("ts").number();
    const double duration_us = e.get("dur").non_negative_number();
    const YamlField args = e.has("args") ? e.get("args") : YamlField(YAML::Node(YAML::NodeType::Map), path, "");
    if (cat == "kernel" || cat == "Kernel") {
      const long long c = arg_integer(args, "correlation");
      if (c >= 0) trace.kernel_us_by_correlation[c] += duration_us;
      continue;
    }
    if (is_gpu_category(cat)) continue;
    TraceEvent ev;
    ev.name = e.get("name").text();
    ev.cat = cat;
    ev.pid = e.has("pid") ? e.get("pid").text() : "";
    ev.lane = ev.pid + "/" + (e.has("tid") ? e.get("tid").text() : "");
    ev.start_us = start_us;
    ev.end_us = start_us + duration_us;
    ev.sequence = arg_integer(args, "Sequence number");
    ev.autograd_backward = args.has("Fwd thread id");
    ev.correlation = arg_integer(args, "correlation");
    ev.index = i;
    trace.events.push_back(std::move(ev));
  }
  std::sort(trace.events.begin(), trace.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.lane != b.lane) return a.lane < b.lane;
    if (a.start_us != b.start_us) return a.start_us < b.start_us;
    return a.end_us > b.end_us;
  });
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    auto [it, inserted] = trace.lanes.emplace(trace.events[i].lane, std::make_pair(i, i + 1));
    if (!inserted) it->second.second = i + 1;
  }
  return trace;
}

}  // namespace whale::plan

// File: report_json.cpp
// The JSON report of an estimate: one object, fixed key order, fixed number format.
#include <cstdio>
#include <sstream>

#include "whale/plan/json_text.h"
#include "whale/plan/objective.h"
#include "whale/sim/report.h"

namespace whale::sim {
namespace {

std::string int_list(const std::vector<int>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i ? "," : "") + std::to_string(values[i]);
  }
  return out + "]";
}

}  // namespace

std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string format_bytes(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f", bytes);
  return buffer;
}

std::string format_json_report(const plan::Plan& plan, const plan::Estimate& est,
                               const std::string& more_members) {
  std::ostringstream out;
  const plan::TimeBreakdown& b = est.breakdown;
  out << "{\n"
      << "  \"plan\": " << plan::json_quote(plan.source_file) << ",\n"
      << "  \"schedule\": " << plan::json_quote(plan::to_string(plan.schedule.kind)) << ",\n"
      << "  \"global_batch\": " << plan.global_batch() << ",\n"
      << "  \"precision\": " << plan::json_quote(plan::to_string(plan.precision)) << ",\n"
      << "  \"gemm_precision_notes\": " << plan::json_string_list(plan::gemm_precision_notes(plan)) << ",\n"
      << "  \"step_time_s\": " << format_number(est.step_time_s) << ",\n"
      << "  \"samples_per_s\": " << format_number(est.samples_per_s) << ",\n"
      << "  \"tokens_per_s\": " << format_number(est.tokens_per_s) << ",\n";
  const plan::PlanCost cost = plan::plan_cost(plan, est);   // null where the cluster has no prices
  out << "  \"usd_per_hour\": " << (cost.priced ? format_number(cost.usd_per_hour) : "null") << ",\n"
      << "  \"usd_per_million_tokens\": " << (cost.priced ? format_number(cost.usd_per_million_tokens) : "null")
      << ",\n"
      << "  \"mfu\": " << format_number(est.mfu) << ",\n"
      << "  \"bubble_fraction\": " << format_number(est.bubble_fraction) << ",\n"
      << "  \"fits\": " << (est.fits ? "true" : "false") << ",\n"
      << "  \"model_flops_per_step\": " << format_number(est.model_flops_per_step) << ",\n"
      << "  \"breakdown\": {\"compute_s\": " << format_number(b.compute_s)
      << ", \"recompute_s\": " << format_number(b.recompute_s)
      << ", \"tp_comm_s\": " << format_number(b.tp_comm_s)
      << ", \"pp_comm_s\": " << format_number(b.pp_comm_s)
      << ", \"dp_comm_s\": " << format_number(b.dp_comm_s)
      << ", \"exposed_comm_s\": " << format_number(b.exposed_comm_s)
      << ", \"idle_s\": " << format_number(b.idle_s) << "},\n"
      << "  \"stages\": [";
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const plan::Stage& st = plan.stages[s];
    out << (s ? "," : "") << "\n    {\"stage\": " << s << ", \"layers\": [" << st.first_layer
        << ", " << st.end_layer - 1 << "], \"dp\": " << st.dp() << ", \"tp\": " << st.tp
        << (st.mixed_tp() ? ", \"replica_tp\": " + int_list(st.replica_tps) : std::string())
        << ", \"devices\": " << int_list(st.devices) << ", \"shares\": " << int_list(st.shares)
        << ", \"recompute\": " << plan::json_quote(plan::to_string(st.recompute)) << "}";
  }
  out << "\n  ],\n  \"devices\": [";
  for (std::size_t i = 0; i < est.devices.size(); ++i) {
    const plan::DeviceEstimate& d = est.devices[i];
    out << (i ? "," : "") << "\n    {\"id\": " << d.id << ", \"model\": " << plan::json_quote(d.model)
        << ", \"peak_memory_bytes\": " << format_bytes(d.peak_memory_bytes)
        << ", \"tensor_memory_bytes\": " << format_bytes(d.tensor_memory_bytes)
        << ", \"capacity_bytes\": " << format_bytes(d.capacity_bytes)
        << ", \"busy_s\": " << format_number(d.busy_s)
        << ", \"achieved_tflops\": " << format_number(d.achieved_tflops) << "}";
  }
  out << "\n  ]";
  if (!more_members.empty()) out << ",\n  " << more_members;
  out << "\n}\n";
  return out.str();
}

}  // namespace whale::sim

// File: svg_compare.cpp
// The comparison picture: predicted above measured on one time axis, coloured by op class.
#include <algorithm>
#include <cstdio>
#include <set>

#include "svg_drawing.h"
#include "whale/plan/atomic_file.h"
#include "whale/sim/op_class.h"
#include "whale/sim/svg_timeline.h"
#include "whale/sim/timeline_compare.h"

namespace whale::sim {
namespace {

constexpr double kLegendY = 34, kHeadingHeight = 26, kPanelGap = 12;

/// The events moved so that the earliest starts at 0.
std::vector<plan::TimelineEvent> from_zero(std::vector<plan::TimelineEvent> events) {
  const Seconds start_s = timeline_start(events);
  for (plan::TimelineEvent& e : events) e.start_s -= start_s;
  return events;
}

/// One swatch and name per class that either timeline has, left to right.
std::string legend(const std::set<OpClass>& present) {
  std::string out;
  double x = 10;
  for (OpClass c : all_op_classes()) {
    if (!present.count(c)) continue;
    const std::string name = to_string(c);
    out += "<rect x='" + svg::num(x) + "' y='" + svg::num(kLegendY) + "' width='10' height='10' fill='" +
           op_class_colour(c) + "'/><text x='" + svg::num(x + 14) + "' y='" +
           svg::num(kLegendY + 9) + "'>" + name + "</text>\n";
    x += 24 + 6.5 * name.size();
  }
  return out;
}

}  // namespace

std::string render_compare_svg(const plan::Plan& plan,
                               const std::vector<plan::TimelineEvent>& predicted,
                               const std::vector<plan::TimelineEvent>& measured, int max_rows) {
  const TimelineComparison comparison = compare_timelines(predicted, measured, {});
  const bool split = has_split_backward(predicted) || has_split_backward(measured);
  std::set<OpClass> present;
  for (const ClassTimes& row : comparison.classes) present.insert(row.op_class);
  const svg::FillOf fill = [split](const plan::TimelineEvent& e) {
    return std::string(op_class_colour(op_class_of(e.name, split)));
  };

  const std::vector<svg::Row> rows = svg::pick_rows(plan, max_rows, true);
  const double panel_h = svg::panel_height(rows.size());
  const double predicted_top = svg::kTop + kHeadingHeight;
  const double measured_top = predicted_top + panel_h + kPanelGap + kHeadingHeight;
  const double axis_y = measured_top + panel_h + 4;
  std::string out = svg::document_start(svg::kLeft + svg::kPlotWidth + svg::kRight, axis_y + 40);
  char title[320];
  std::snprintf(title, sizeof title,
                "%s: %s, %d micro-batches: predicted step %.6f s, measured step %.6f s (ratio %.3f)",
                plan.model.name.c_str(), plan::to_string(plan.schedule.kind), plan.micro_batches,
                comparison.predicted_step_s, comparison.measured_step_s,
                time_ratio(comparison.predicted_step_s, comparison.measured_step_s));
  out += "<text x='10' y='22' font-size='14'>" + svg::escaped(title) + "</text>\n" + legend(present);
  const Seconds span_s = std::max(comparison.predicted_step_s, comparison.measured_step_s);
  const double scale = span_s > 0 ? svg::kPlotWidth / span_s : 0;
  char heading[160];
  std::snprintf(heading, sizeof heading, "predicted (whale-sim): step %.6f s", comparison.predicted_step_s);
  out += "<text x='10' y='" + svg::num(predicted_top - 8) + "' font-size='13'>" + heading + "</text>\n";
  out += svg::draw_panel(rows, predicted_top, "predicted", from_zero(predicted), scale, fill);
  std::snprintf(heading, sizeof heading, "measured (whale-run): step %.6f s", comparison.measured_step_s);
  out += "<text x='10' y='" + svg::num(measured_top - 8) + "' font-size='13'>" + heading + "</text>\n";
  out += svg::draw_panel(rows, measured_top, "measured", from_zero(measured), scale, fill);
  if (span_s > 0) out += svg::axis(span_s, axis_y);
  return out + "</svg>\n";
}

void write_compare_svg_file(const std::string& path, const std::string& option,
                            const plan::Plan& plan,
                            const std::vector<plan::TimelineEvent>& predicted,
                            const std::vector<plan::TimelineEvent>& measured) {
  write_file_atomically(path, render_compare_svg(plan, predicted, measured), option);
}

}  // namespace whale::sim

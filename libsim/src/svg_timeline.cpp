// File: svg_timeline.cpp
// Draws the predicted pipeline timeline as SVG: rows, micro-batch colours, communication bars,
// time axis (the drawing itself is svg_drawing.h's).
#include "whale/sim/svg_timeline.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "svg_drawing.h"
#include "whale/plan/atomic_file.h"

namespace whale::sim {
namespace {

/// A distinct hue per micro-batch; forward light, backward dark, a split backward's weight pass
/// between them, recompute greyish.
std::string colour(int micro_batch, char kind) {
  const double hue = std::fmod(micro_batch * 137.508, 360.0);
  const int lightness = kind == 'F' ? 70 : kind == 'B' ? 42 : kind == 'W' ? 56 : 82;
  const int saturation = kind == 'R' ? 25 : 65;
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "hsl(%.1f,%d%%,%d%%)", hue, saturation, lightness);
  return buffer;
}

/// Compute boxes by micro-batch and pass, the optimizer grey, communication by lane.
std::string fill_by_micro_batch(const plan::TimelineEvent& e) {
  static const std::map<std::string, std::string> kLaneColours = {
      {"optimizer", "#555555"}, {"tp", "#d62728"}, {"pp", "#1f77b4"}, {"dp", "#2ca02c"}};
  const auto lane = kLaneColours.find(e.lane);
  return lane != kLaneColours.end() ? lane->second : colour(e.micro_batch, e.name[0]);
}

}  // namespace

std::string render_svg_timeline(const plan::Plan& plan, const plan::Estimate& est, int max_rows) {
  const std::vector<svg::Row> rows = svg::pick_rows(plan, max_rows, false);
  const double height = svg::kTop + svg::panel_height(rows.size()) + 50;
  std::string out = svg::document_start(svg::kLeft + svg::kPlotWidth + svg::kRight, height);
  char title[256];
  std::snprintf(title, sizeof title,
                "%s: %s, %d micro-batches, step %.4f s, bubble %.1f%% (F light, B dark, R pale; "
                "thin bars: tp/pp/dp)",
                plan.model.name.c_str(), plan::to_string(plan.schedule.kind), plan.micro_batches,
                est.step_time_s, 100 * est.bubble_fraction);
  out += "<text x='10' y='22' font-size='14'>" + svg::escaped(title) + "</text>\n";
  if (!(est.step_time_s > 0)) return out + "</svg>\n";  // nothing to draw on a zero time axis
  out += svg::draw_panel(rows, svg::kTop, "timeline", est.timeline,
                         svg::kPlotWidth / est.step_time_s, fill_by_micro_batch);
  out += svg::axis(est.step_time_s, svg::kTop + svg::panel_height(rows.size()) + 4);
  return out + "</svg>\n";
}

void write_svg_timeline_file(const std::string& path, const plan::Plan& plan,
                             const plan::Estimate& estimate) {
  write_file_atomically(path, render_svg_timeline(plan, estimate), "--svg");
}

}  // namespace whale::sim

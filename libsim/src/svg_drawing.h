// File: svg_drawing.h
// The drawing shared by the timeline pictures (svg_timeline.cpp, svg_compare.cpp): rows of
// devices, one panel of a timeline's events on those rows, and the time axis. Private to libsim.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/plan/timeline.h"
#include "whale/plan/units.h"

namespace whale::sim::svg {

constexpr double kLeft = 190, kRight = 30, kTop = 50, kRowHeight = 34, kBoxHeight = 20;
constexpr double kPlotWidth = 1300;

struct Row {
  int device = 0;
  std::string label;         // "s0 r1 (dev 2)", "s0,s2 r0 t1 (dev 1)"
  bool multi_stage = false;  // its group runs several stages
};

/// One row per replica of each device group, showing the replica's first device; with
/// `every_shard`, one row per tensor shard of the replica instead. More than `max_rows` rows:
/// only replica 0 of each group, first device.
std::vector<Row> pick_rows(const plan::Plan& plan, int max_rows, bool every_shard);

/// The fill colour of an event's box (compute, optimizer lanes) or bar (tp, pp, dp lanes).
using FillOf = std::function<std::string(const plan::TimelineEvent&)>;

/// Draws `events` on `rows` whose first row's top is at `top_y`: row backgrounds and labels,
/// then, inside <g id='ID'>, one <rect> per event of a drawn device and lane: boxes for the
/// compute and optimizer lanes (labelled "F3", "B3 s5" when wide enough), thin bars under them
/// for tp, pp and dp. Other devices and lanes are left out. `scale`: pixels per second; event
/// times count from 0 at the plot's left edge.
std::string draw_panel(const std::vector<Row>& rows, double top_y, const std::string& id,
                       const std::vector<plan::TimelineEvent>& events, double scale,
                       const FillOf& fill);
/// The height of a panel of `row_count` rows.
double panel_height(std::size_t row_count);

/// The opening <svg> tag of a picture of the given size, with a white background.
std::string document_start(double width, double height);
/// A time axis from 0 to `span_s` with about ten round ticks, its line at `y`.
std::string axis(Seconds span_s, double y);
/// Text made safe for SVG (XML) content.
std::string escaped(const std::string& text);
/// A coordinate with two decimals.
std::string num(double value);

}  // namespace whale::sim::svg

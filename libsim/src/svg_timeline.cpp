// File: svg_timeline.cpp
// Draws the pipeline timeline as SVG: rows, micro-batch colours, communication bars, time axis.
#include "whale/sim/svg_timeline.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "whale/plan/atomic_file.h"
#include "whale/plan/error.h"
#include "whale/plan/schedule_program.h"

namespace whale::sim {
namespace {

constexpr double kLeft = 190, kRight = 30, kTop = 50, kRowHeight = 34, kBoxHeight = 20;
constexpr double kPlotWidth = 1300;

struct Row {
  int device = 0;
  std::string label;
  bool multi_stage = false;  // its group runs several stages
};

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

/// Text made safe for SVG (XML) content.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '\'') out += "&apos;";
    else out += c;
  }
  return out;
}

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  return buffer;
}

std::vector<Row> pick_rows(const plan::Plan& plan, int max_rows) {
  const plan::ScheduleProgram program = plan::generate_schedule(plan);
  int replicas = 0;
  for (const plan::GroupProgram& g : program.groups) replicas += plan.stages[g.stages[0]].dp();
  std::vector<Row> rows;
  for (const plan::GroupProgram& g : program.groups) {
    const plan::Stage& first = plan.stages[g.stages[0]];
    std::string stages;
    for (int s : g.stages) stages += (stages.empty() ? "s" : ",") + std::to_string(s);
    const int shown = replicas > max_rows ? 1 : first.dp();
    for (int r = 0; r < shown; ++r) {
      const int device = first.replica_devices(r)[0];
      rows.push_back({device,
                      stages + " r" + std::to_string(r) + " (dev " + std::to_string(device) + ")",
                      g.stages.size() > 1});
    }
  }
  return rows;
}

/// The time axis: about ten round ticks.
std::string axis(double step_s, double y) {
  const double raw = step_s / 10;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double tick_s = raw / magnitude < 2 ? 2 * magnitude : (raw / magnitude < 5 ? 5 * magnitude
                                                                              : 10 * magnitude);
  std::string out = "<line x1='" + num(kLeft) + "' y1='" + num(y) + "' x2='" +
                    num(kLeft + kPlotWidth) + "' y2='" + num(y) + "' stroke='black'/>\n";
  for (double t = 0; t <= step_s * 1.0001; t += tick_s) {
    const double x = kLeft + t / step_s * kPlotWidth;
    char label[32];
    std::snprintf(label, sizeof label, "%g s", std::round(t / tick_s) * tick_s);
    out += "<line x1='" + num(x) + "' y1='" + num(y) + "' x2='" + num(x) + "' y2='" +
           num(y + 5) + "' stroke='black'/><text x='" + num(x) + "' y='" + num(y + 18) +
           "' text-anchor='middle'>" + label + "</text>\n";
  }
  return out;
}

}  // namespace

std::string render_svg_timeline(const plan::Plan& plan, const plan::Estimate& est, int max_rows) {
  const std::vector<Row> rows = pick_rows(plan, max_rows);
  std::map<int, int> row_of_device;
  std::vector<bool> multi_stage;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    row_of_device[rows[i].device] = static_cast<int>(i);
    multi_stage.push_back(rows[i].multi_stage);
  }
  const double height = kTop + rows.size() * kRowHeight + 50;
  const double width = kLeft + kPlotWidth + kRight;
  const double scale = est.step_time_s > 0 ? kPlotWidth / est.step_time_s : 0;
  std::string out = "<svg xmlns='http://www.w3.org/2000/svg' width='" + num(width) +
                    "' height='" + num(height) +
                    "' font-family='sans-serif' font-size='11'>\n<rect width='100%' "
                    "height='100%' fill='white'/>\n";
  char title[256];
  std::snprintf(title, sizeof title,
                "%s: %s, %d micro-batches, step %.4f s, bubble %.1f%% (F light, B dark, R pale; "
                "thin bars: tp/pp/dp)",
                plan.model.name.c_str(), plan::to_string(plan.schedule.kind), plan.micro_batches,
                est.step_time_s, 100 * est.bubble_fraction);
  out += "<text x='10' y='22' font-size='14'>" + escaped(title) + "</text>\n";
  if (!(est.step_time_s > 0)) return out + "</svg>\n";  // nothing to draw on a zero time axis
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = kTop + i * kRowHeight;
    out += "<rect x='" + num(kLeft) + "' y='" + num(y) + "' width='" + num(kPlotWidth) +
           "' height='" + num(kBoxHeight) + "' fill='#eeeeee'/>\n<text x='8' y='" +
           num(y + 14) + "'>" + rows[i].label + "</text>\n";
  }
  static const std::map<std::string, std::pair<double, const char*>> kCommBars = {
      {"tp", {kBoxHeight + 1, "#d62728"}}, {"pp", {kBoxHeight + 5, "#1f77b4"}},
      {"dp", {kBoxHeight + 9, "#2ca02c"}}};
  for (const plan::TimelineEvent& e : est.timeline) {
    const auto row = row_of_device.find(e.device);
    if (row == row_of_device.end()) continue;
    const double x = kLeft + e.start_s * scale, w = std::max(0.5, e.duration_s * scale);
    const double y = kTop + row->second * kRowHeight;
    if (e.lane == "compute" || e.lane == "optimizer") {
      const char kind = e.lane == "optimizer" ? 'O' : e.name[0];
      const std::string fill = kind == 'O' ? "#555555" : colour(e.micro_batch, kind);
      out += "<rect x='" + num(x) + "' y='" + num(y) + "' width='" + num(w) + "' height='" +
             num(kBoxHeight) + "' fill='" + fill + "' stroke='white' stroke-width='0.5'/>\n";
      // Groups that run several stages (interleaved, wave) name the stage too: "F3 s5".
      std::string label = kind + std::to_string(e.micro_batch);
      if (row->second < static_cast<int>(multi_stage.size()) && multi_stage[row->second]) {
        label += " s" + std::to_string(e.stage);
      }
      if (w > 6.0 * label.size() && kind != 'O') {
        out += "<text x='" + num(x + w / 2) + "' y='" + num(y + 14) +
               "' text-anchor='middle' font-size='9'>" + label + "</text>\n";
      }
    } else if (kCommBars.count(e.lane)) {
      const auto& [offset, fill] = kCommBars.at(e.lane);
      out += "<rect x='" + num(x) + "' y='" + num(y + offset) + "' width='" + num(w) +
             "' height='3' fill='" + fill + "'/>\n";
    }
  }
  out += axis(est.step_time_s, kTop + rows.size() * kRowHeight + 4);
  out += "</svg>\n";
  return out;
}

void write_svg_timeline_file(const std::string& path, const plan::Plan& plan,
                             const plan::Estimate& estimate) {
  write_file_atomically(path, render_svg_timeline(plan, estimate), "--svg");
}

}  // namespace whale::sim

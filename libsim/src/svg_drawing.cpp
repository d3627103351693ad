// File: svg_drawing.cpp
// Rows, event panels and the time axis of the timeline pictures (svg_drawing.h).
#include "svg_drawing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "whale/plan/schedule_program.h"

namespace whale::sim::svg {

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

std::string num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

std::vector<Row> pick_rows(const plan::Plan& plan, int max_rows, bool every_shard) {
  const plan::ScheduleProgram program = plan::generate_schedule(plan);
  int replicas = 0, devices = 0;
  for (const plan::GroupProgram& g : program.groups) {
    replicas += plan.stages[g.stages[0]].dp();
    devices += static_cast<int>(plan.stages[g.stages[0]].devices.size());
  }
  const bool shards = every_shard && devices <= max_rows;
  std::vector<Row> rows;
  for (const plan::GroupProgram& g : program.groups) {
    const plan::Stage& first = plan.stages[g.stages[0]];
    std::string stages;
    for (int s : g.stages) stages += (stages.empty() ? "s" : ",") + std::to_string(s);
    const int shown = replicas > max_rows ? 1 : first.dp();
    for (int r = 0; r < shown; ++r) {
      const std::vector<int> replica = first.replica_devices(r);
      const std::size_t shown_shards = shards ? replica.size() : 1;
      for (std::size_t t = 0; t < shown_shards; ++t) {
        const std::string shard = shards && replica.size() > 1 ? " t" + std::to_string(t) : "";
        rows.push_back({replica[t],
                        stages + " r" + std::to_string(r) + shard + " (dev " +
                            std::to_string(replica[t]) + ")",
                        g.stages.size() > 1});
      }
    }
  }
  return rows;
}

double panel_height(std::size_t row_count) { return row_count * kRowHeight; }

std::string draw_panel(const std::vector<Row>& rows, double top_y, const std::string& id,
                       const std::vector<plan::TimelineEvent>& events, double scale,
                       const FillOf& fill) {
  std::map<int, int> row_of_device;
  for (std::size_t i = 0; i < rows.size(); ++i) row_of_device[rows[i].device] = static_cast<int>(i);
  std::string out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = top_y + i * kRowHeight;
    out += "<rect x='" + num(kLeft) + "' y='" + num(y) + "' width='" + num(kPlotWidth) +
           "' height='" + num(kBoxHeight) + "' fill='#eeeeee'/>\n<text x='8' y='" +
           num(y + 14) + "'>" + rows[i].label + "</text>\n";
  }
  // Vertical offsets of the communication bars under a row's boxes.
  static const std::map<std::string, double> kBarOffsets = {
      {"tp", kBoxHeight + 1}, {"pp", kBoxHeight + 5}, {"dp", kBoxHeight + 9}};
  out += "<g id='" + id + "'>\n";
  for (const plan::TimelineEvent& e : events) {
    const auto row = row_of_device.find(e.device);
    if (row == row_of_device.end()) continue;
    const double x = kLeft + e.start_s * scale, w = std::max(0.5, e.duration_s * scale);
    const double y = top_y + row->second * kRowHeight;
    if (e.lane == "compute" || e.lane == "optimizer") {
      out += "<rect x='" + num(x) + "' y='" + num(y) + "' width='" + num(w) + "' height='" +
             num(kBoxHeight) + "' fill='" + fill(e) + "' stroke='white' stroke-width='0.5'/>\n";
      if (e.lane == "optimizer") continue;
      // Groups that run several stages (interleaved, wave) name the stage too: "F3 s5".
      std::string label = e.name.substr(0, 1) + std::to_string(e.micro_batch);
      if (rows[static_cast<std::size_t>(row->second)].multi_stage) label += " s" + std::to_string(e.stage);
      if (w > 6.0 * label.size()) {
        out += "<text x='" + num(x + w / 2) + "' y='" + num(y + 14) +
               "' text-anchor='middle' font-size='9'>" + escaped(label) + "</text>\n";
      }
    } else if (kBarOffsets.count(e.lane)) {
      out += "<rect x='" + num(x) + "' y='" + num(y + kBarOffsets.at(e.lane)) + "' width='" +
             num(w) + "' height='3' fill='" + fill(e) + "'/>\n";
    }
  }
  return out + "</g>\n";
}

std::string document_start(double width, double height) {
  return "<svg xmlns='http://www.w3.org/2000/svg' width='" + num(width) + "' height='" +
         num(height) +
         "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n";
}

std::string axis(Seconds span_s, double y) {
  const double raw = span_s / 10;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double tick_s = raw / magnitude < 2 ? 2 * magnitude : (raw / magnitude < 5 ? 5 * magnitude
                                                                              : 10 * magnitude);
  std::string out = "<line x1='" + num(kLeft) + "' y1='" + num(y) + "' x2='" +
                    num(kLeft + kPlotWidth) + "' y2='" + num(y) + "' stroke='black'/>\n";
  for (double t = 0; t <= span_s * 1.0001; t += tick_s) {
    const double x = kLeft + t / span_s * kPlotWidth;
    char label[32];
    std::snprintf(label, sizeof label, "%g s", std::round(t / tick_s) * tick_s);
    out += "<line x1='" + num(x) + "' y1='" + num(y) + "' x2='" + num(x) + "' y2='" +
           num(y + 5) + "' stroke='black'/><text x='" + num(x) + "' y='" + num(y + 18) +
           "' text-anchor='middle'>" + label + "</text>\n";
  }
  return out;
}

}  // namespace whale::sim::svg

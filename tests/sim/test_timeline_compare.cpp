// File: test_timeline_compare.cpp
// Predicted against measured timelines: exact per-class and per-device sums and ratios on a
// small hand-written pair, the classes of split backward passes, and the comparison picture
// (both timelines, one rect per event).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/sim/op_class.h"
#include "whale/sim/simulator.h"
#include "whale/sim/svg_timeline.h"
#include "whale/sim/timeline_compare.h"

using namespace whale;
using sim::OpClass;

namespace {

// Two devices, one micro-batch: stage 0 on device 0, stage 1 on device 1. Step 4.5 s.
const std::vector<plan::TimelineEvent> kPredicted = {
    {0, "compute", "F s0 mb0", 0, 0, 0.0, 1.0},
    {0, "pp", "send act s0 mb0", 0, 0, 1.0, 0.25},
    {1, "compute", "F s1 mb0", 1, 0, 1.25, 0.5},
    {1, "tp", "tp s1 mb0", 1, 0, 1.5, 0.125},
    {1, "compute", "B s1 mb0", 1, 0, 1.75, 0.25},
    {0, "compute", "B s0 mb0", 0, 0, 2.0, 2.0},
    {0, "optimizer", "optimizer s0", 0, -1, 4.0, 0.5},
};
// The same step measured: every pass twice as long, a receive that waits, no tp events, and
// clocks that start at 10 s. Step 8 s.
const std::vector<plan::TimelineEvent> kMeasured = {
    {0, "compute", "F s0 mb0", 0, 0, 10.0, 2.0},
    {1, "pp", "recv act s1 mb0", 1, 0, 10.0, 2.5},
    {0, "pp", "send act s0 mb0", 0, 0, 12.0, 0.5},
    {1, "compute", "F s1 mb0", 1, 0, 12.5, 1.0},
    {1, "compute", "B s1 mb0", 1, 0, 13.5, 0.5},
    {0, "compute", "B s0 mb0", 0, 0, 13.0, 4.0},
    {0, "optimizer", "optimizer s0", 0, -1, 17.0, 1.0},
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The text of the SVG group <g id='ID'> ... </g>.
std::string group(const std::string& svg, const std::string& id) {
  const std::size_t begin = svg.find("<g id='" + id + "'>");
  REQUIRE(begin != std::string::npos);
  return svg.substr(begin, svg.find("</g>", begin) - begin);
}

}  // namespace

TEST_CASE("compare: seconds per op class and per device, summed over devices, with ratios") {
  const sim::TimelineComparison c = sim::compare_timelines(kPredicted, kMeasured, {0, 1});
  CHECK(c.predicted_step_s == 4.5);
  CHECK(c.measured_step_s == 8.0);
  REQUIRE(c.classes.size() == 5);
  const OpClass order[] = {OpClass::forward, OpClass::backward, OpClass::tp_collective,
                           OpClass::pp_send_recv, OpClass::optimizer};
  const double predicted_s[] = {1.5, 2.25, 0.125, 0.25, 0.5};
  const double measured_s[] = {3.0, 4.5, 0.0, 3.0, 1.0};
  const int predicted_events[] = {2, 2, 1, 1, 1}, measured_events[] = {2, 2, 0, 2, 1};
  for (std::size_t i = 0; i < c.classes.size(); ++i) {
    CAPTURE(i);
    CHECK(c.classes[i].op_class == order[i]);
    CHECK(c.classes[i].predicted_s == predicted_s[i]);
    CHECK(c.classes[i].measured_s == measured_s[i]);
    CHECK(c.classes[i].predicted_events == predicted_events[i]);
    CHECK(c.classes[i].measured_events == measured_events[i]);
  }
  CHECK(sim::time_ratio(c.classes[0].predicted_s, c.classes[0].measured_s) == 0.5);
  CHECK(sim::time_ratio(c.classes[2].predicted_s, c.classes[2].measured_s) == 0);
  REQUIRE(c.devices.size() == 2);
  CHECK(c.devices[0].predicted_compute_s == 3.0);
  CHECK(c.devices[0].measured_compute_s == 6.0);
  CHECK(c.devices[1].predicted_compute_s == 0.75);
  CHECK(c.devices[1].measured_compute_s == 1.5);

  const std::string text = sim::format_comparison_text(c);
  CHECK(text.find("step time            predicted 4.500000 s   measured 8.000000 s   ratio 0.562") !=
        std::string::npos);
  CHECK(text.find("\n  forward                  1.500000      3.000000    0.500   2/2\n") != std::string::npos);
  CHECK(text.find("\n  tp-collective            0.125000      0.000000        -   1/0\n") != std::string::npos);
  CHECK(text.find("\n  pp-send-recv             0.250000      3.000000    0.083   1/2\n") != std::string::npos);
  CHECK(text.find("\n  1                         0.750000      1.500000    0.500\n") != std::string::npos);

  const std::string json = sim::format_comparison_json(c);
  CHECK(json.rfind("{\"predicted_step_s\": 4.5, \"measured_step_s\": 8, \"step_ratio\": 0.5625,", 0) == 0);
  CHECK(json.find("{\"class\": \"tp-collective\", \"predicted_s\": 0.125, \"measured_s\": 0, \"ratio\": null, "
                  "\"predicted_events\": 1, \"measured_events\": 0}") != std::string::npos);
  CHECK(json.find("{\"class\": \"pp-send-recv\", \"predicted_s\": 0.25, \"measured_s\": 3, \"ratio\": "
                  "0.0833333333, \"predicted_events\": 1, \"measured_events\": 2}") != std::string::npos);
  CHECK(json.find("{\"id\": 0, \"predicted_compute_s\": 3, \"measured_compute_s\": 6, \"ratio\": 0.5}") !=
        std::string::npos);
}

TEST_CASE("compare: device rows list the devices asked for; class sums count every device") {
  const sim::TimelineComparison c = sim::compare_timelines(kPredicted, kMeasured, {1});
  REQUIRE(c.devices.size() == 1);
  CHECK(c.devices[0].device == 1);
  CHECK(c.devices[0].predicted_compute_s == 0.75);
  CHECK(c.devices[0].measured_compute_s == 1.5);
  CHECK(c.classes[0].predicted_s == 1.5);
}

TEST_CASE("op classes: the names whale-sim and whale-run emit") {
  CHECK(sim::op_class_of("F s1 mb3", false) == OpClass::forward);
  CHECK(sim::op_class_of("R s1 mb3", false) == OpClass::recompute);
  CHECK(sim::op_class_of("B s1 mb3", false) == OpClass::backward);
  CHECK(sim::op_class_of("B s1 mb3", true) == OpClass::backward_input);
  CHECK(sim::op_class_of("W s1 mb3", true) == OpClass::backward_weight);
  CHECK(sim::op_class_of("tp s0 mb1", false) == OpClass::tp_collective);
  CHECK(sim::op_class_of("send grad s1 mb0", false) == OpClass::pp_send_recv);
  CHECK(sim::op_class_of("recv act s1 mb0", false) == OpClass::pp_send_recv);
  CHECK(sim::op_class_of("reduce_bucket s0 b2", false) == OpClass::dp_grad_reduce);
  CHECK(sim::op_class_of("allgather weights s0", false) == OpClass::dp_weight_allgather);
  CHECK(sim::op_class_of("optimizer s1", false) == OpClass::optimizer);
  CHECK(sim::op_class_of("Forward", false) == OpClass::other);
  CHECK(std::string(sim::to_string(OpClass::backward_input)) == "backward-input");
}

TEST_CASE("compare: weight passes in either timeline make both timelines' B passes backward-input") {
  std::vector<plan::TimelineEvent> measured = kMeasured;
  measured.push_back({0, "compute", "W s0 mb0", 0, 0, 17.0, 0.5});
  const sim::TimelineComparison c = sim::compare_timelines(kPredicted, measured, {0, 1});
  REQUIRE(c.classes.size() == 6);
  CHECK(c.classes[1].op_class == OpClass::backward_input);
  CHECK(c.classes[1].predicted_s == 2.25);
  CHECK(c.classes[1].measured_s == 4.5);
  CHECK(c.classes[2].op_class == OpClass::backward_weight);
  CHECK(c.classes[2].predicted_s == 0);
  CHECK(c.classes[2].measured_s == 0.5);
}

TEST_CASE("compare picture: both timelines on one axis, one rect per event, a legend") {
  const plan::Plan plan = plan::load_plan("configs/plans/tiny/pp2-1f1b.yaml");
  plan::EvaluateOptions options;
  options.timeline = true;
  const std::vector<plan::TimelineEvent> predicted = sim::Simulator().evaluate(plan, options).timeline;
  REQUIRE(predicted.size() > 10);
  const std::string svg = sim::render_compare_svg(plan, predicted, kMeasured);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(count(group(svg, "predicted"), "<rect") == predicted.size());
  CHECK(count(group(svg, "measured"), "<rect") == kMeasured.size());
  CHECK(svg.find("predicted (whale-sim): step ") != std::string::npos);
  CHECK(svg.find("measured (whale-run): step 8.000000 s") != std::string::npos);
  CHECK(svg.find("measured step 8.000000 s") != std::string::npos);
  // One swatch per class either has, in the class colour that the boxes use too.
  CHECK(svg.find(std::string("fill='") + sim::op_class_colour(OpClass::forward) + "'/><text x='24.00' y='43.00'>forward") !=
        std::string::npos);
  CHECK(count(group(svg, "measured"), std::string("fill='") + sim::op_class_colour(OpClass::pp_send_recv)) == 2);
  // The measured timeline starts at 0 like the predicted one: its first box at the left edge.
  CHECK(group(svg, "measured").find("<rect x='190.00'") != std::string::npos);
}

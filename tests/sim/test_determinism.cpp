// File: test_determinism.cpp
// The same plan gives byte-identical reports, traces and pictures, evaluated twice.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "whale/plan/plan.h"
#include "whale/plan/timeline.h"
#include "whale/sim/report.h"
#include "whale/sim/simulator.h"
#include "whale/sim/svg_timeline.h"

using namespace whale;

namespace {

struct Outputs {
  std::string json, text, trace, svg;
};

Outputs render(const plan::Plan& p) {
  plan::EvaluateOptions options;
  options.timeline = true;
  const plan::Estimate est = sim::Simulator().evaluate(p, options);
  std::ostringstream trace;
  plan::write_chrome_trace(trace, est.timeline, std::vector<std::string>(p.cluster.devices.size(), "dev"));
  return {sim::format_json_report(p, est), sim::format_text_report(p, est), trace.str(),
          sim::render_svg_timeline(p, est)};
}

}  // namespace

TEST_CASE("evaluating a heterogeneous plan twice gives byte-identical outputs") {
  const plan::Plan p =
      plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/a100-v100-gpt3-1.3b.yaml");
  const Outputs first = render(p);
  const Outputs second = render(p);
  CHECK(first.json == second.json);
  CHECK(first.text == second.text);
  CHECK(first.trace == second.trace);
  CHECK(first.svg == second.svg);
  CHECK(first.json.find("\"step_time_s\": ") != std::string::npos);
  CHECK(first.json.find("\"fits\": true") != std::string::npos);
  CHECK(first.svg.rfind("<svg", 0) == 0);
}

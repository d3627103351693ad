// File: whale_sim.cpp
// whale-sim: evaluates one plan with the simulator and prints a text or JSON report; optionally
// writes the predicted timeline as Chrome trace JSON and as an SVG picture, and holds it against
// a measured trace (--compare, --compare-svg).
#include <iostream>
#include <string>

#include "tool_main.h"
#include "whale/plan/error.h"
#include "whale/plan/plan.h"
#include "whale/plan/timeline.h"
#include "whale/plan/trace_check.h"
#include "whale/sim/report.h"
#include "whale/sim/simulator.h"
#include "whale/sim/svg_timeline.h"
#include "whale/sim/timeline_compare.h"
#include "whale/plan/limits.h"
#include "whale/plan/version.h"

int main(int argc, char** argv) {
  CLI::App app{"whale-sim: simulate one training step of a hybrid-parallel plan"};
  app.set_version_flag("--version", whale::plan::version_text("whale-sim"));
  std::string plan_path, profiles_dir, format = "text", trace_path, svg_path, measured_path,
      compare_svg_path;
  app.add_option("plan", plan_path, "plan YAML file")->required();
  app.add_option("--profiles", profiles_dir, "folder of device profiles (default: shipped)")
      ->check(whale::app::existing_folder());
  int sequence = 0;
  app.add_option("--sequence", sequence, "tokens per sample (default: the plan's model's)")
      ->check(whale::app::number_in(1, whale::plan::kMaxModelDimension));
  app.add_option("--format", format, "report format")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--trace", trace_path, "write the predicted timeline as Chrome trace JSON")
      ->check(whale::app::output_file());
  app.add_option("--svg", svg_path, "write the pipeline timeline as an SVG picture")->check(whale::app::output_file());
  CLI::Option* compare = app.add_option(
      "--compare", measured_path, "compare with a measured Chrome trace (whale-run --trace)");
  app.add_option("--compare-svg", compare_svg_path,
                 "write predicted and measured timelines stacked as an SVG picture")
      ->needs(compare)
      ->check(whale::app::output_file());
  return whale::app::run_tool("whale-sim", app, argc, argv, [&] {
    whale::app::check_distinct_outputs({{"--trace", trace_path}, {"--svg", svg_path}, {"--compare-svg", compare_svg_path}});
    whale::plan::Plan plan = whale::plan::load_plan(plan_path, profiles_dir);
    if (sequence > 0) {
      whale::plan::set_sequence(plan.model, sequence, plan.precision, "--sequence");
      whale::plan::validate_plan(plan);  // sequence parallelism needs tp to divide it
    }
    whale::plan::EvaluateOptions options;
    options.timeline = !trace_path.empty() || !svg_path.empty() || !measured_path.empty();
    const whale::plan::Estimate estimate = whale::sim::Simulator().evaluate(plan, options);
    std::vector<whale::plan::TimelineEvent> measured;
    std::string compare_json, compare_text;
    if (!measured_path.empty()) {
      measured = whale::plan::read_chrome_trace_file(measured_path,
                                                     static_cast<int>(plan.cluster.devices.size()));
      whale::plan::check_trace_matches_plan(measured, plan, measured_path);
      std::vector<int> plan_devices;
      for (const whale::plan::DeviceEstimate& d : estimate.devices) plan_devices.push_back(d.id);
      const auto comparison = whale::sim::compare_timelines(estimate.timeline, measured, plan_devices);
      compare_json = "\"compare\": " + whale::sim::format_comparison_json(comparison);
      compare_text = "\n" + whale::sim::format_comparison_text(comparison);
    }
    std::cout << (format == "json" ? whale::sim::format_json_report(plan, estimate, compare_json)
                                   : whale::sim::format_text_report(plan, estimate) + compare_text);
    if (!trace_path.empty()) {
      std::vector<std::string> labels;
      for (const whale::plan::Device& d : plan.cluster.devices) {
        labels.push_back("dev " + std::to_string(d.id) + " " + d.model);
      }
      whale::plan::write_chrome_trace_file(trace_path, estimate.timeline, labels);
    }
    if (!svg_path.empty()) whale::sim::write_svg_timeline_file(svg_path, plan, estimate);
    if (!compare_svg_path.empty()) {
      whale::sim::write_compare_svg_file(compare_svg_path, "--compare-svg", plan, estimate.timeline,
                                         measured);
    }
    if (!estimate.fits) {
      std::cerr << "whale-sim: warning: " << plan_path
                << ": the plan does not fit in memory (see OUT OF MEMORY in the report; "
                   "framework reserves come from the profiles, docs/profile.md)\n";
    }
    std::cout.flush();
    if (!std::cout) throw whale::Error("(stdout)", "", "a writable standard output", "the disk may be full");
    return 0;
  });
}

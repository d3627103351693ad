// File: whale_plan.cpp
// whale-plan: searches the fastest hybrid plan of a model on a cluster with the simulator,
// prints it (text or JSON) with the baseline / upper-bound comparison, and writes the plan.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <unistd.h>
#include <vector>

#include "tool_main.h"
#include "whale/plan/atomic_file.h"
#include "whale/plan/batch_advice.h"
#include "whale/plan/error.h"
#include "whale/plan/host_heap.h"
#include "whale/plan/plan_runtime.h"
#include "whale/plan/limits.h"
#include "whale/plan/export.h"
#include "whale/plan/launch.h"
#include "whale/plan/planner.h"
#include "whale/plan/precision_advice.h"
#include "whale/plan/structure_cache.h"
#include "whale/plan/subset_search_cache.h"
#include "whale/plan/timeline.h"
#include "whale/sim/report.h"
#include "whale/sim/simulator.h"
#include "whale/sim/svg_timeline.h"
#include "whale/plan/version.h"

int main(int argc, char** argv) {
  whale::plan::keep_freed_host_memory();
  const auto command_start = std::chrono::steady_clock::now();  // --time-limit counts from here
  CLI::App app{"whale-plan: find the fastest hybrid-parallel plan on a heterogeneous cluster"};
  app.set_version_flag("--version", whale::plan::version_text("whale-plan"));
  std::string cluster_path, model_path, profiles_dir, hints_path, out_path, format = "text", trace_path, svg_path;
  whale::plan::PlannerOptions options;
  app.add_option("--cluster", cluster_path, "cluster YAML file")->required();
  app.add_option("--model", model_path, "model YAML file")->required();
  app.add_option("--profiles", profiles_dir, "folder of device profiles (default: shipped)")
      ->check(whale::app::existing_folder());
  app.add_option("--global-batch", options.global_batch, "samples per step (default: the model's)")
      ->check(whale::app::number_in(1, whale::plan::kMaxGlobalBatch));
  int sequence = 0;
  app.add_option("--sequence", sequence, "tokens per sample (default: the model's; a config.json's max_position_embeddings)")
      ->check(whale::app::number_in(1, whale::plan::kMaxModelDimension));
  app.add_option("--hints", hints_path, "planner hints YAML (docs/hints.md)");
  app.add_option("--out", out_path, "write the best plan here (self-contained YAML)")->check(whale::app::output_file());
  app.add_option("--top", options.top_k, "alternatives to show besides the best")->check(whale::app::number_in(0, 1000));
  app.add_option("--format", format, "output format")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--trace", trace_path, "write the best plan's predicted timeline as Chrome trace JSON")
      ->check(whale::app::output_file());
  app.add_option("--svg", svg_path, "write the best plan's timeline as an SVG picture")->check(whale::app::output_file());
  app.add_option("--time-limit", options.time_limit_s, "seconds for the whole command (loading, search, advice); past them the best plan found so far")
      ->check(whale::app::number_in(0, 1e9));
  app.add_option("--threads", options.threads, "simulator threads")->check(whale::app::number_in(1, 1024));
  app.add_option("--max-evaluations", options.max_evaluations,
                 "analytic layouts per search at most (0: no cap)")->check(whale::app::number_in(0, 1e15));
  std::string objective = "throughput";
  app.add_option("--objective", objective,
                 "throughput (the fastest plan) or cost (the fewest USD per 1M tokens; docs/plan.md#cost)")
      ->check(CLI::IsMember({"throughput", "cost"}));
  double budget_usd_per_hour = -1;
  app.add_option("--budget-usd-per-hour", budget_usd_per_hour,
                 "reject plans whose used devices cost more per hour (needs price_per_hour_usd)")
      ->check(whale::app::number_in(0, whale::plan::kMaxPricePerHourUsd));
  std::string precision;
  app.add_option("--precision", precision,
                 "auto (the better of the model's precision and the frameworks' substitute), bf16, fp16 or fp32 "
                 "(default: the model's, with advice)")
      ->check(CLI::IsMember({"auto", "bf16", "fp16", "fp32"}));
  bool runnable = false, progress = false;
  app.add_flag("--runnable", runnable,
               "only plans whale-run executes (today: every strategy the search knows)");
  bool allow_tf32 = false;
  app.add_flag("--allow-tf32", allow_tf32,
               "fp32 training runs GEMMs as TF32 where the device has it (the model's training.allow_tf32)");
  app.add_flag("--progress", progress, "report search progress on stderr even when it is not a terminal");
  std::string megatron_path, deepspeed_path;
  bool export_constrained = false;
  app.add_option("--export-megatron", megatron_path, "write Megatron-LM's arguments of the best plan (docs/export.md)")
      ->check(whale::app::output_file());
  app.add_option("--export-deepspeed", deepspeed_path, "write DeepSpeed's ds_config.json of the best plan")
      ->check(whale::app::output_file());
  app.add_flag("--export-constrained", export_constrained,
               "export the best plan the framework can express when it cannot express the best one");
  whale::plan::LaunchRequests launches;
  std::string hosts_text;
  CLI::Option* launch = app.add_option("--export-launch", launches,
                 "slurm FILE or mpirun FILE: the best plan's launch across machines (docs/run.md)");
  app.add_option("--hosts", hosts_text, "NODE=HOST,...: real host names of the cluster's nodes in --export-launch")
      ->needs(launch);
  return whale::app::run_tool("whale-plan", app, argc, argv, [&] {
    if (export_constrained && megatron_path.empty() && deepspeed_path.empty())
      throw whale::Error("", "--export-constrained", "--export-megatron or --export-deepspeed to apply to",
                         "name the framework's output file");
    whale::app::check_distinct_outputs({{"--out", out_path}, {"--trace", trace_path}, {"--svg", svg_path},
                                        {"--export-megatron", megatron_path}, {"--export-deepspeed", deepspeed_path}});
    for (const auto& entry : launches) whale::plan::parse_launcher(entry.first, "--export-launch");  // before the search
    if (runnable) options.strategies = whale::plan::runnable_strategies();
    whale::plan::parse_objective(objective, &options.objective);   // checked by CLI11
    if (budget_usd_per_hour >= 0) options.budget_usd_per_hour = budget_usd_per_hour;
    const whale::plan::Cluster cluster = whale::plan::load_cluster(cluster_path, profiles_dir);
    const whale::plan::HostMap hosts =
        hosts_text.empty() ? whale::plan::HostMap{} : whale::plan::parse_host_map(hosts_text, cluster, "--hosts");
    whale::plan::Model model = whale::plan::load_model(model_path);
    if (allow_tf32) model.training.framework_precision.allow_tf32 = true;
    if (sequence > 0) whale::plan::set_sequence(model, sequence, model.training.precision, "--sequence");
    whale::plan::PrecisionRequest precision_request;
    if (!precision.empty()) whale::plan::parse_precision_request(precision, &precision_request);  // checked by CLI11
    if (!hints_path.empty()) options.hints = whale::plan::load_hints(hints_path);
    if (progress || isatty(STDERR_FILENO)) {
      options.progress = [](const whale::plan::Progress& p) {
        std::fprintf(stderr, "\r%-40s %ld/%ld  layouts %ld, bounded away %ld, simulated %ld   ", p.phase.c_str(),
                     p.done, p.total, p.layouts_considered, p.bounded_away, p.simulated);
        std::fflush(stderr);
      };
    }
    // The batch advice's re-plans reuse the main search's structures (same cluster and model).
    options.structure_cache = std::make_shared<whale::plan::StructureCache>();
    // The precision advice's search takes the model's searches on devices that price both
    // precisions alike (an H100's or an A100's alone), and repeated ones, from here.
    options.subset_cache = std::make_shared<whale::plan::SubsetSearchCache>();
    const whale::sim::Simulator simulator;
    std::string precision_note;
    // The batch advice measures throughput against the upper bound: under the cost objective or
    // a budget the best plan may leave devices out on purpose. It runs as soon as the result is
    // known, beside the precision advice's search where that search cannot change the result.
    constexpr double kAdviceTarget = 0.9;  // of the upper bound
    std::string batch_warning;
    // --time-limit bounds the whole command: the searches get what loading left (at least 1 ms:
    // 0 would mean no limit), the advice's re-plans what the searches left.
    const double time_limit_s = options.time_limit_s;
    auto elapsed_s = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - command_start).count();
    };
    auto time_left_s = [&] { return time_limit_s - elapsed_s(); };
    if (time_limit_s > 0) options.time_limit_s = std::max(1e-3, time_left_s());
    auto advise_batch = [&](const whale::plan::PlanResult& planned) {
      const int batch = planned.best().plan.global_batch();
      if (options.objective == whale::plan::Objective::throughput && !options.budget_usd_per_hour &&
          planned.has_comparison && planned.fraction_of_upper_bound < kAdviceTarget &&
          whale::plan::batch_too_small(planned, static_cast<int>(whale::plan::usable_devices(options.hints, cluster).size()),
                                      kAdviceTarget)) {
        whale::plan::PlannerOptions quiet = options;
        quiet.progress = nullptr;
        whale::plan::BatchAdvice advice;
        advice.cut = true;
        // Without --time-limit, the advice's own bound (kAdviceLeastBoundS).
        const double default_bound_s =
            time_limit_s > 0 ? 0.0 : std::max(whale::plan::kAdviceLeastBoundS, elapsed_s());
        quiet.time_limit_s = time_limit_s > 0 ? time_left_s() : default_bound_s;
        if (quiet.time_limit_s > 0)
          advice = whale::plan::advise_global_batch(cluster, model, simulator, quiet, batch, kAdviceTarget);
        batch_warning = whale::plan::format_batch_warning(batch, planned, advice, kAdviceTarget, default_bound_s);
      }
    };
    whale::plan::PlanResult result = whale::plan::search_with_precision(cluster, model, simulator, options,
                                                                        precision_request, &precision_note, advise_batch);
    if (options.progress) std::fprintf(stderr, "\r%-60s\r", "");
    std::cerr << precision_note << batch_warning;
    const whale::plan::RankedPlan& best = result.best();
    whale::plan::EvaluateOptions eval;
    eval.timeline = !trace_path.empty() || !svg_path.empty();
    const whale::plan::Estimate estimate = eval.timeline ? simulator.evaluate(best.plan, eval) : best.estimate;
    if (format == "json") {
      std::cout << whale::plan::format_planner_json(result);
    } else {
      std::cout << "best plan: " << best.label << "\n" << whale::plan::describe_plan(best.plan)
                << whale::sim::format_text_report(best.plan, estimate) << whale::plan::format_planner_text(result);
    }
    // Every export is chosen before any file is written: one that fails leaves none written.
    struct Export {
      std::string option, path;
      whale::plan::ChosenExport chosen;
    };
    std::vector<Export> exports;
    for (const auto& [framework, path] : {std::pair{whale::plan::Framework::megatron, megatron_path},
                                          std::pair{whale::plan::Framework::deepspeed, deepspeed_path}}) {
      if (path.empty()) continue;
      exports.push_back({whale::plan::export_option(framework), path,
                         whale::plan::choose_export(result, cluster, model, simulator, options, framework,
                                                    export_constrained, path)});
    }
    if (!out_path.empty()) whale::plan::save_plan(best.plan, out_path, /*embed=*/true);
    if (!trace_path.empty()) {
      std::vector<std::string> labels;
      for (const whale::plan::Device& d : best.plan.cluster.devices) {
        labels.push_back("dev " + std::to_string(d.id) + " " + d.model);
      }
      whale::plan::write_chrome_trace_file(trace_path, estimate.timeline, labels);
    }
    if (!svg_path.empty()) whale::sim::write_svg_timeline_file(svg_path, best.plan, estimate);
    for (const Export& e : exports) {
      whale::write_file_atomically(e.path, e.chosen.text, e.option);
      std::cerr << e.chosen.report;
    }
    if (!launches.empty())
      std::cerr << whale::plan::write_launches(launches, whale::plan::whale_run_launch(best.plan, out_path, hosts),
                                               "--export-launch");
    std::cout.flush();
    if (!std::cout) throw whale::Error("(stdout)", "", "a writable standard output", "the disk may be full");
    return 0;
  });
}

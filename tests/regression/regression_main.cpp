// File: regression_main.cpp
// The simulated-throughput regression: re-plans every scenario of scenarios.yaml and compares
// the best plan's simulated samples/s with baseline.yaml. Fails on a drop of more than 0.5%,
// or on any change the baseline does not record; `--update` rewrites the baseline instead.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/planner.h"
#include "whale/sim/simulator.h"

namespace {

const char* kScenarios = "tests/regression/scenarios.yaml";
const char* kBaseline = "tests/regression/baseline.yaml";
constexpr double kMaxDrop = 0.005;        // a drop beyond this is a regression
constexpr double kSameRelative = 1e-7;    // closer than this is "unchanged" (printing noise)

struct Scenario {
  std::string name, cluster, model, hints;
  int global_batch = 0;
};

std::vector<Scenario> load_scenarios() {
  std::vector<Scenario> out;
  for (const YAML::Node& n : YAML::LoadFile(kScenarios)["scenarios"]) {
    Scenario s;
    s.name = n["name"].as<std::string>();
    s.cluster = n["cluster"].as<std::string>();
    s.model = n["model"].as<std::string>();
    if (n["hints"]) s.hints = n["hints"].as<std::string>();
    if (n["global_batch"]) s.global_batch = n["global_batch"].as<int>();
    out.push_back(s);
  }
  return out;
}

std::map<std::string, double> load_baseline() {
  std::map<std::string, double> out;
  std::ifstream probe(kBaseline);
  if (!probe) return out;
  for (const auto& e : YAML::LoadFile(kBaseline)["samples_per_s"]) out[e.first.as<std::string>()] = e.second.as<double>();
  return out;
}

// Plans one scenario deterministically (one thread, no time limit, no comparison searches).
double plan_scenario(const Scenario& s, const whale::sim::Simulator& simulator) {
  const whale::plan::Cluster cluster = whale::plan::load_cluster(s.cluster);
  const whale::plan::Model model = whale::plan::load_model(s.model);
  whale::plan::PlannerOptions options;
  options.global_batch = s.global_batch;
  options.compare = false;
  options.top_k = 0;
  if (!s.hints.empty()) options.hints = whale::plan::load_hints(s.hints);
  return whale::plan::search_plans(cluster, model, simulator, options).best().estimate.samples_per_s;
}

}  // namespace

int main(int argc, char** argv) {
  const bool update = argc > 1 && std::string(argv[1]) == "--update";
  try {
    const std::vector<Scenario> scenarios = load_scenarios();
    const std::map<std::string, double> baseline = load_baseline();
    const whale::sim::Simulator simulator;
    std::map<std::string, double> now;
    int failures = 0;
    std::printf("%-32s %16s %16s %10s  %s\n", "scenario", "baseline", "now", "change", "verdict");
    for (const Scenario& s : scenarios) {
      const double value = plan_scenario(s, simulator);
      now[s.name] = value;
      const auto it = baseline.find(s.name);
      std::string verdict = "ok";
      double change = 0;
      if (it == baseline.end()) {
        verdict = "NO BASELINE";
      } else {
        change = (value - it->second) / it->second;
        if (change < -kMaxDrop) {
          verdict = "DROP > 0.5%";
        } else if (std::fabs(change) > kSameRelative) {
          verdict = "CHANGED (update the baseline)";
        }
      }
      if (verdict != "ok" && !update) ++failures;
      std::printf("%-32s %16.6f %16.6f %+9.3f%%  %s\n", s.name.c_str(), it == baseline.end() ? 0.0 : it->second,
                  value, 100.0 * change, update ? "updated" : verdict.c_str());
      std::fflush(stdout);
    }
    if (update) {
      std::ofstream out(kBaseline);
      out << "# Simulated samples/s of the best plan whale-plan finds for each scenario of\n"
          << "# scenarios.yaml. Rewrite with: cmake --build <build> --target update_regression_baseline\n"
          << "samples_per_s:\n";
      for (const auto& e : now) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", e.second);
        out << "  " << e.first << ": " << buf << "\n";
      }
      std::printf("baseline written to %s\n", kBaseline);
      return 0;
    }
    std::printf("%d of %zu scenarios failed\n", failures, scenarios.size());
    return failures == 0 ? 0 : 1;
  } catch (const whale::Error& e) {
    std::fprintf(stderr, "whale_regression: error: %s\n", e.what());
    return 2;
  } catch (const YAML::Exception& e) {
    std::fprintf(stderr, "whale_regression: error: %s: %s\n", kScenarios, e.what());
    return 2;
  }
}

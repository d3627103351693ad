// File: test_bad_input.cpp
// Bad input: a model that fits nowhere, by the quick estimate or by the simulator's count (by
// how much, what would help), a global batch that cannot be divided, contradictory hints, an
// empty cluster and an unknown device model; in the library (messages) and through whale-plan
// (one line on stderr, exit code 2).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "planner_fixtures.h"
#include "whale/plan/error.h"

using namespace whale;

namespace {

std::string search_error(const plan::Cluster& cluster, const plan::Model& model, const plan::PlannerOptions& o) {
  const sim::Simulator simulator;
  try {
    plan::search_plans(cluster, model, simulator, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct CliResult {
  int exit_code = -1;
  std::string err;
};

// Runs whale-plan with `args`, stdout discarded; returns the exit code and stderr.
CliResult run_cli(const std::string& args) {
  const std::string err_path = std::string(WHALE_BINARY_DIR) + "/test_planner_cli.err";
  const std::string cmd = std::string(WHALE_PLAN_EXE) + " " + args + " > /dev/null 2> " + err_path;
  const int status = std::system(cmd.c_str());
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  return CliResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

bool one_line_error(const std::string& err) {
  return err.rfind("whale-plan: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

// The shortfall in GiB that a "does not fit" message names.
double gib_short(const std::string& message) {
  const size_t end = message.find(" GiB short");
  REQUIRE(end != std::string::npos);
  const size_t start = message.rfind(", ", end);
  REQUIRE(start != std::string::npos);
  return std::stod(message.substr(start + 2, end - start - 2));
}

// The simulator with every device's peak raised by its capacity: no plan fits by its count,
// though the quick estimate's layouts do, and each device is short by exactly its simulated peak.
class CapacityShortSimulator : public plan::CostModel {
 public:
  plan::Estimate evaluate(const plan::Plan& plan, const plan::EvaluateOptions& options) const override {
    plan::Estimate e = simulator_.evaluate(plan, options);
    for (plan::DeviceEstimate& d : e.devices) d.peak_memory_bytes += d.capacity_bytes;
    e.fits = false;
    return e;
  }
  plan::StepBound bound(const plan::Plan& plan) const override {
    plan::StepBound b = simulator_.bound(plan);
    b.fits = false;
    b.step_time_s = 0;
    b.overflowing.clear();
    for (const plan::Stage& stage : plan.stages) b.overflowing.insert(b.overflowing.end(), stage.devices.begin(), stage.devices.end());
    std::sort(b.overflowing.begin(), b.overflowing.end());
    return b;
  }

 private:
  const sim::Simulator simulator_;
};

}  // namespace

TEST_CASE("layouts that fit by the quick estimate but by no simulated count name the closest plan so counted") {
  const plan::Cluster cluster = test::shipped_cluster("mixed-node");
  const plan::Model model = test::shipped_model("gpt2-124m");
  plan::PlannerOptions o;
  o.compare = false;
  const sim::Simulator simulator;
  const plan::PlanResult fits = plan::search_plans(cluster, model, simulator, o);
  double most_peak = 0;   // of the plan that fits, its fullest device
  for (const plan::DeviceEstimate& d : fits.best().estimate.devices) most_peak = std::max(most_peak, d.peak_memory_bytes);
  std::string m;
  try {
    plan::search_plans(cluster, model, CapacityShortSimulator{}, o);
  } catch (const Error& e) {
    m = e.what();
  }
  CHECK(m.find("model 'gpt2-124m' does not fit on cluster 'mixed-node' by the simulator's count: at the closest plan (") !=
        std::string::npos);
  CHECK(m.find(" peaks at ") != std::string::npos);
  CHECK(m.find("use a smaller micro-batch") != std::string::npos);
  // Each candidate is short by its fullest device's simulated peak: the closest by no more than
  // the plan that fits (the messages round to 0.1 GiB).
  CHECK(gib_short(m) > 0);
  CHECK(gib_short(m) <= most_peak / (1024.0 * 1024 * 1024) + 0.05);
}

TEST_CASE("a model that fits nowhere says by how much and what would help") {
  plan::PlannerOptions o;
  o.compare = false;
  const std::string m = search_error(test::shipped_cluster("v100-t4"), test::shipped_model("gpt3-175b"), o);
  CHECK(m.find("gpt3-175b.yaml") != std::string::npos);
  CHECK(m.find("model 'gpt3-175b' does not fit on cluster 'v100-t4': at the closest plan") != std::string::npos);
  CHECK(m.find("GiB short") != std::string::npos);
  CHECK(m.find("full recomputation and a sharded optimizer") != std::string::npos);
  CHECK(m.find("as many devices") != std::string::npos);
}

TEST_CASE("the closest plan of a bounded look for it is never closer than the whole look's") {
  // GPT-3 1.3B at 131,072 tokens on v100-t4: activations overflow every candidate.
  plan::Model model = test::shipped_model("gpt3-1.3b");
  plan::set_sequence(model, 131072, model.training.precision, "--sequence");
  plan::PlannerOptions o;
  o.compare = false;
  o.global_batch = 512;
  o.shortfall_layouts = 0;   // every candidate
  const std::string whole = search_error(test::shipped_cluster("v100-t4"), model, o);
  CHECK(whole.find("at the closest plan") != std::string::npos);
  CHECK(whole.find("activations take") != std::string::npos);
  for (long cap : {1L, 16L, 2048L}) {
    o.shortfall_layouts = cap;
    const std::string bounded = search_error(test::shipped_cluster("v100-t4"), model, o);
    CHECK(bounded.find("at the closest plan") != std::string::npos);
    CHECK(gib_short(bounded) >= gib_short(whole));
  }
}

TEST_CASE("a model whose activations overflow at batch 1 is not told to shrink its batch") {
  plan::PlannerOptions o;
  o.compare = false;
  o.global_batch = 1;
  plan::Model llama = test::shipped_model("llama2-7b");
  plan::set_sequence(llama, 32768, llama.training.precision, "--sequence");
  const std::string m = search_error(test::shipped_cluster("mixed-node"), llama, o);
  CHECK(m.find("activations take") != std::string::npos);
  CHECK(m.find("use a shorter sequence (--sequence, now 32768 tokens), more devices") != std::string::npos);
  CHECK(m.find("--global-batch") == std::string::npos);
}

TEST_CASE("a batch planned on fewer devices that do not hold the model says which and why") {
  // 25 heads allow tp 1 only: one stage of 8 devices has dp 8, so one sample is planned on one
  // device, which cannot hold 1.5 B parameters in fp32 with Adam (12 GiB).
  const plan::Model model = plan::load_model(test::temp_file(
      "heads25.yaml", "name: heads25\nfamily: gpt\nlayers: 48\nhidden: 1600\nheads: 25\nsequence: 1024\n"
                      "vocabulary: 50257\ntraining: {global_batch: 1, precision: fp32, optimizer: adamw}\n"));
  plan::PlannerOptions o;
  o.compare = false;
  o.hints.max_pipeline_depth = 1;
  const std::string m = search_error(test::shipped_cluster("cpu-local-8"), model, o);
  CHECK(m.find("does not fit on cluster 'cpu-local-8'") != std::string::npos);
  CHECK(m.find(", searched on devices 0 only: the global batch of 1 sample(s) is smaller than the data-parallel "
               "degree of every pipeline on all 8 usable devices (8 at least)") != std::string::npos);
  CHECK(m.find("; a larger --global-batch uses more devices)") != std::string::npos);
}

TEST_CASE("a global batch that is not positive names the batch and a fix") {
  plan::PlannerOptions o;
  o.compare = false;
  o.global_batch = -4;
  const std::string m = search_error(test::shipped_cluster("cpu-local-8"), test::shipped_model("tiny"), o);
  CHECK(m.find("expected a positive global batch, got -4") != std::string::npos);
}

TEST_CASE("an empty cluster is refused") {
  plan::Cluster empty;
  empty.name = "empty";
  empty.source_file = "empty.yaml";
  plan::PlannerOptions o;
  const std::string m = search_error(empty, test::shipped_model("tiny"), o);
  CHECK(m == "empty.yaml: nodes: the cluster has no devices (hint: list at least one node with devices)");
}

TEST_CASE("whale-plan maps bad input to one line on stderr and exit code 2") {
  const std::string tiny = "--model configs/models/tiny.yaml";
  SUBCASE("unknown device model") {
    const std::string c = test::temp_file("unknown_model.yaml", "name: odd\nnodes:\n  - name: n\n    devices: [{model: gpu-9000, count: 2}]\n    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}\n    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 50}\n");
    const CliResult r = run_cli("--cluster " + c + " " + tiny);
    CHECK(r.exit_code == 2);
    CHECK(one_line_error(r.err));
    CHECK(r.err.find("gpu-9000") != std::string::npos);
  }
  SUBCASE("empty cluster") {
    const std::string c = test::temp_file("empty_cluster.yaml", "name: empty\nnodes: []\n");
    const CliResult r = run_cli("--cluster " + c + " " + tiny);
    CHECK(r.exit_code == 2);
    CHECK(one_line_error(r.err));
    CHECK(r.err.find("empty_cluster.yaml") != std::string::npos);
  }
  SUBCASE("contradictory hints") {
    const std::string h = test::temp_file("cli_hints.yaml", "layers:\n  - {range: [0, 3], dp: 2}\n  - {range: [2, 5], dp: 4}\n");
    const CliResult r = run_cli("--cluster configs/clusters/cpu-local-8.yaml " + tiny + " --hints " + h);
    CHECK(r.exit_code == 2);
    CHECK(one_line_error(r.err));
    CHECK(r.err.find("cli_hints.yaml: layers[1]: dp contradicts layers[0] on layers 2-3") != std::string::npos);
  }
  SUBCASE("model that fits nowhere") {
    const CliResult r = run_cli("--cluster configs/clusters/v100-t4.yaml --model configs/models/gpt3-175b.yaml");
    CHECK(r.exit_code == 2);
    CHECK(one_line_error(r.err));
    CHECK(r.err.find("does not fit") != std::string::npos);
  }
}

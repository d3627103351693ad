// File: test_planner_candidates.cpp
// What the planner weighs besides its own space: the baseline's plan, each device model's
// plan alone and, with three models or more, the strongest models together are candidates
// (never slower than the baseline; devices may stay idle, with the reason; a batch too small
// for every pipeline on all devices, or one that leaves all of them mostly idle, is planned on
// fewer), the upper bound is absent when no device model alone holds the model, and the
// quick estimate holds zb-h1's weight-pass tensors as the simulator does.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "planner_fixtures.h"
#include "whale/plan/hints.h"
#include "whale/plan/objective.h"
#include "whale/plan/search_estimate.h"

using namespace whale;

namespace {

// Two A100-80GB on NVLink (ids 0-1) and one T4 (id 2), the nodes joined by 10 Gb/s Ethernet.
constexpr const char* kSlowLinkT4 = R"(name: a100-t4-ethernet
nodes:
  - name: a
    devices: [{model: a100-sxm4-80gb, count: 2}]
    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 20}
  - name: t
    devices: [{model: t4, count: 1}]
    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 20}
)";

// Two A100-80GB (ids 0-1) and two H100 (ids 2-3), each pair on NVLink in its node and the two
// nodes on InfiniBand, and one T4 (id 4) behind 10 Gb/s Ethernet.
constexpr const char* kTwoFastOneSlow = R"(name: a100-h100-t4
nodes:
  - name: a
    devices: [{model: a100-sxm4-80gb, count: 2}]
    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 1600, latency_us: 5}
  - name: h
    devices: [{model: h100-sxm-80gb, count: 2}]
    intra_link: {kind: nvlink, bandwidth_gbps: 7200, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 1600, latency_us: 5}
  - name: t
    devices: [{model: t4, count: 1}]
    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}
    network: {kind: ethernet, bandwidth_gbps: 10, latency_us: 20}
)";

// Four nodes of two A100-80GB on NVLink (ids 0-1, 2-3, 4-5, 6-7) at $4 an hour each, joined by
// `network`.
std::string four_pairs(const std::string& network) {
  return "name: four-pairs\nnetwork: " + network +
         "\nnodes:\n  - name: n\n    count: 4\n"
         "    devices: [{model: a100-sxm4-80gb, count: 2, price_per_hour_usd: 4}]\n"
         "    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}\n";
}

}  // namespace

TEST_CASE("strongest_subsets: the k fastest models alone for k = 2 .. n - 1, models with no plan alone last") {
  using Subsets = std::vector<std::vector<std::string>>;
  CHECK(plan::strongest_subsets({"a", "b"}, {1.0, 2.0}).empty());
  CHECK(plan::strongest_subsets({"a", "b", "c"}, {1.0, 5.0, 3.0}) == Subsets{{"b", "c"}});
  // b has no plan alone (0): it ranks after every model with one; the tie of a and d keeps
  // cluster order.
  CHECK(plan::strongest_subsets({"a", "b", "c", "d"}, {2.0, 0.0, 5.0, 2.0}) ==
        Subsets{{"c", "a"}, {"c", "a", "d"}});
}

TEST_CASE("a T4 behind Ethernet beside A100s and H100s stays idle: the A100s and H100s together beat every other candidate") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("two_fast_one_slow.yaml", kTwoFastOneSlow));
  const plan::Model model = test::shipped_model("gpt2-124m");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 64;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  std::set<int> used;
  for (const plan::Stage& s : r.best().plan.stages) used.insert(s.devices.begin(), s.devices.end());
  CHECK(used == std::set<int>{0, 1, 2, 3});
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].device_model == "t4");
  CHECK(r.idle[0].devices == std::vector<int>{4});
  // Faster than either fast model alone (what the candidates held before the subsets) ...
  REQUIRE(r.upper_bound.per_model.size() == 3);
  CHECK(r.best().estimate.samples_per_s > r.upper_bound.per_model[0].second);
  CHECK(r.best().estimate.samples_per_s > r.upper_bound.per_model[1].second);
  // ... and equal to its twin: the same search with the T4 excluded by a hint.
  plan::PlannerOptions twin = o;
  twin.hints.exclude_devices = {4};
  const plan::PlanResult without_t4 = plan::search_plans(cluster, model, simulator, twin);
  CHECK(r.best().estimate.samples_per_s == without_t4.best().estimate.samples_per_s);
  CHECK_NOTHROW(plan::validate_plan(r.best().plan));
}

TEST_CASE("cpu-local-slow with gpt3-1.3b: the best plan is never slower than the baseline, the upper bound absent") {
  const plan::Cluster cluster = test::shipped_cluster("cpu-local-slow");
  const plan::Model model = test::shipped_model("gpt3-1.3b");
  const sim::Simulator simulator;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, plan::PlannerOptions{});
  REQUIRE(r.baseline_found);
  // The baseline, a uniform layout over both devices (tp 2: dp 2 would need ZeRO-2 to fit, and
  // whale-run's ZeRO-2 keeps its gradient buffer whole), runs every layer at the slow CPU's
  // pace. The search's two-stage pipeline gives the slow CPU fewer layers.
  CHECK(r.best().estimate.samples_per_s >= r.baseline.estimate.samples_per_s);
  CHECK(r.best().plan.pipeline_groups() == 2);
  CHECK(r.speedup_vs_baseline > 1.0);
  CHECK(r.speedup_vs_baseline == r.best().estimate.samples_per_s / r.baseline.estimate.samples_per_s);
  CHECK(r.idle.empty());
  CHECK(r.baseline_devices == std::vector<int>{0, 1});
  // Neither CPU alone holds the 1.3B model's state: no upper bound, and the report says so.
  CHECK(r.upper_bound.absent());
  REQUIRE(r.upper_bound.per_model.size() == 2);
  CHECK(r.upper_bound.per_model[0].second == 0.0);
  CHECK(r.upper_bound.per_model[1].second == 0.0);
  CHECK(r.upper_bound.devices == std::vector<std::vector<int>>{{0}, {1}});
  CHECK(r.fraction_of_upper_bound == 0.0);
  const std::string text = plan::format_planner_text(r);
  CAPTURE(text);
  CHECK(text.find("cpu-measured on devices 0 (no plan fits), cpu-slow2x on devices 1 (no plan fits)): absent: "
                  "no device model alone can hold the model") != std::string::npos);
  CHECK(text.find("uniform pp1 tp2 dp1 on devices 0-1") != std::string::npos);
  CHECK(plan::format_planner_json(r).find("\"upper_bound\": {\"found\": false") != std::string::npos);
}

TEST_CASE("a T4 behind 10 Gb/s Ethernet stays idle: the A100s alone are faster, and the report says why") {
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("slow_link_t4.yaml", kSlowLinkT4));
  const plan::Model model = test::shipped_model("gpt2-124m");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 64;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  std::set<int> used;
  for (const plan::Stage& s : r.best().plan.stages) used.insert(s.devices.begin(), s.devices.end());
  CHECK(used == std::set<int>{0, 1});
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].device_model == "t4");
  CHECK(r.idle[0].devices == std::vector<int>{2});
  CHECK(r.idle[0].reason.rfind("using every device, the best plan found (", 0) == 0);
  // The best plan is the A100s' plan alone: the upper bound's A100 part.
  REQUIRE(r.upper_bound.per_model.size() == 2);
  CHECK(r.best().estimate.samples_per_s == r.upper_bound.per_model[0].second);
  CHECK(plan::format_planner_text(r).find("idle: devices 2 (t4): using every device") != std::string::npos);
  CHECK_NOTHROW(plan::validate_plan(r.best().plan));
}

TEST_CASE("hints keep the baseline and each model alone as candidates where those honour them") {
  // cpu-local-slow with gpt3-1.3b: the baseline is tp 2 over both devices in one stage. A
  // max_pipeline_depth of 1 allows it, so the hinted search must return a one-stage plan at
  // least as fast; a schedule hint that forbids its 1f1b (zb-h1 only) must not return it, and
  // then no plan may be faster than the unhinted search's best.
  const plan::Cluster cluster = test::shipped_cluster("cpu-local-slow");
  const plan::Model model = test::shipped_model("gpt3-1.3b");
  const sim::Simulator simulator;
  const plan::PlanResult free = plan::search_plans(cluster, model, simulator, plan::PlannerOptions{});
  REQUIRE(free.baseline_found);
  REQUIRE(free.baseline.plan.pipeline_groups() == 1);
  plan::PlannerOptions depth_one;
  depth_one.hints.max_pipeline_depth = 1;
  const plan::PlanResult hinted = plan::search_plans(cluster, model, simulator, depth_one);
  CHECK(hinted.best().estimate.samples_per_s >= hinted.baseline.estimate.samples_per_s);
  CHECK(hinted.best().plan.pipeline_groups() == 1);
  CHECK(plan::plan_honours_hints(depth_one.hints, hinted.best().plan));
  plan::PlannerOptions zb_only;
  zb_only.hints.schedules = {plan::ScheduleKind::zb_h1};
  CHECK_FALSE(plan::plan_honours_hints(zb_only.hints, free.baseline.plan));
  const plan::PlanResult zb = plan::search_plans(cluster, model, simulator, zb_only);
  CHECK(zb.best().plan.schedule.kind == plan::ScheduleKind::zb_h1);
  CHECK(zb.best().estimate.samples_per_s < free.best().estimate.samples_per_s);
}

TEST_CASE("plan_honours_hints: depth, schedule, boundaries, layer degrees and exclusions, each alone") {
  plan::Plan p;
  p.schedule.kind = plan::ScheduleKind::one_f_one_b;
  plan::Stage a, b;
  a.first_layer = 0, a.end_layer = 3, a.devices = {0, 1}, a.tp = 2, a.shares = {1};
  b.first_layer = 3, b.end_layer = 6, b.devices = {2, 3}, b.tp = 1, b.shares = {1, 1};
  p.stages = {a, b};
  plan::Hints h;
  CHECK(plan::plan_honours_hints(h, p));
  h.max_pipeline_depth = 1;
  CHECK_FALSE(plan::plan_honours_hints(h, p));
  h.max_pipeline_depth = 2;
  CHECK(plan::plan_honours_hints(h, p));
  h.schedules = {plan::ScheduleKind::gpipe};
  CHECK_FALSE(plan::plan_honours_hints(h, p));
  h.schedules = {plan::ScheduleKind::gpipe, plan::ScheduleKind::one_f_one_b};
  CHECK(plan::plan_honours_hints(h, p));
  h.stage_boundaries = {0, 4};
  CHECK_FALSE(plan::plan_honours_hints(h, p));
  h.stage_boundaries = {0, 3};
  CHECK(plan::plan_honours_hints(h, p));
  h.layers = {{4, 5, 2, 0, "layers[0]"}};  // tp 2 on layers 4-5: stage b runs them at tp 1
  CHECK_FALSE(plan::plan_honours_hints(h, p));
  h.layers = {{4, 5, 0, 2, "layers[0]"}};  // dp 2 there: stage b has 2 replicas
  CHECK(plan::plan_honours_hints(h, p));
  h.exclude_devices = {3};
  CHECK_FALSE(plan::plan_honours_hints(h, p));
}

TEST_CASE("quick estimate: zb-h1 holds weight-pass tensors besides its activations, as the simulator counts them") {
  const plan::Cluster cluster = test::shipped_cluster("a100-64");
  plan::Model model;
  model.training.precision = plan::Precision::bf16;
  model.training.optimizer = "adam";
  plan::Layer layer;
  layer.name = "one";
  // One tp-split GEMM C[10,30] = A[10,20] B[20,30]: its weight pass keeps the input (200
  // elements) and the output gradient (300), the wider split over tp: at tp 1, 500 elements of
  // 2 bytes = 1000 bytes per sample.
  layer.gemms.push_back(plan::GemmOp{"linear", 10, 30, 20, 1, true});
  layer.activation_bytes_replicated = 100;
  model.layers.push_back(layer);
  CHECK(plan::weight_pass_bytes(layer, 1, plan::Precision::bf16) == 1000);
  const plan::AnalyticModel analytic(cluster, model);
  // 2 samples a micro-batch, 3 micro-batches of activations (100 bytes a sample) in flight.
  const auto activations = [&](int weight_passes) {
    return analytic.memory("a100-sxm4-80gb", 0, 1, 1, 1, 2, 3, plan::Recompute::none, false, false, weight_passes).activation_bytes;
  };
  CHECK(activations(-1) == 600);                           // 100 x 2 x 3: no split backward
  CHECK(activations(0) == 600 + (1000 - 100) * 2);         // an input pass swaps 100 for 1000
  CHECK(activations(1) == 600 + (1000 + 1000 - 100) * 2);  // and one weight pass held besides
}

TEST_CASE("a global batch smaller than every pipeline's data-parallel degree is planned on fewer devices, the rest idle") {
  // cpu-local-8 in one pipeline stage: the tiny model's 4 heads allow tp <= 4, so a group of
  // all 8 devices has dp 2 at least; one sample fills one replica of tp 4 on 4 devices.
  const plan::Cluster cluster = test::shipped_cluster("cpu-local-8");
  const plan::Model model = test::shipped_model("tiny");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 1;
  o.hints.max_pipeline_depth = 1;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  REQUIRE(r.best().plan.stages.size() == 1);
  const plan::Stage& stage = r.best().plan.stages.front();
  CHECK(stage.devices.size() == 4);
  CHECK(stage.replicas() == 1);
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].devices.size() == 4);
  CHECK(r.idle[0].reason.find("the global batch of 1 sample(s) is smaller than the data-parallel degree of every "
                              "pipeline on all 8 usable devices (2 at least)") != std::string::npos);
  std::set<int> used(stage.devices.begin(), stage.devices.end());
  for (int d : r.idle[0].devices) CHECK(used.count(d) == 0);
  // The comparison is of the devices planned: the baseline runs on them too.
  CHECK(r.baseline_devices.size() == 4);
  CHECK_NOTHROW(plan::validate_plan(r.best().plan));
  // Without a pipeline-depth limit the batch of one sample still finds a plan (pipelines).
  o.hints.max_pipeline_depth = 0;
  const plan::PlanResult deep = plan::search_plans(cluster, model, simulator, o);
  for (const plan::Stage& s : deep.best().plan.stages) CHECK(s.replicas() == 1);
}

TEST_CASE("a global batch too small to feed every device is planned on the devices it feeds where that is faster") {
  // cpu-local-8 with the tiny Llama: its 2 key-value heads allow tp <= 2, so the 8 CPUs form 4
  // replicas of tp 2 and 3 samples feed 3 of them. A plan of all 8 has fewer micro-batches
  // than stages (the best, a pipeline of 4 groups of tp 2, idles half its step in bubbles);
  // tp 2 x dp 3 on the first 6 runs one sample a replica with no bubble.
  const plan::Cluster cluster = test::shipped_cluster("cpu-local-8");
  const plan::Model model = test::shipped_model("tiny-llama");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 3;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  REQUIRE(r.best().plan.stages.size() == 1);
  const plan::Stage& stage = r.best().plan.stages.front();
  CHECK(stage.devices == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(stage.tp == 2);
  CHECK(stage.replicas() == 3);
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].devices == std::vector<int>{6, 7});
  CHECK(r.idle[0].reason.find("the global batch of 3 sample(s) feeds the tensor-parallel replicas of devices 0-5 "
                              "only") != std::string::npos);
  // Faster than the best plan of all 8 devices: the search without the comparison, which
  // (as the comparison's own searches) does not look for fewer devices.
  plan::PlannerOptions all = o;
  all.compare = false;
  const plan::PlanResult on_eight = plan::search_plans(cluster, model, simulator, all);
  CHECK(plan::used_devices(on_eight.best().plan).size() == 8);
  CHECK(r.best().estimate.step_time_s < on_eight.best().estimate.step_time_s);
  // Four samples feed all four replicas: every device is used.
  o.global_batch = 4;
  const plan::PlanResult fed = plan::search_plans(cluster, model, simulator, o);
  CHECK(plan::used_devices(fed.best().plan).size() == 8);
  CHECK(fed.idle.empty());
}

TEST_CASE("a model that fits only at a degree some devices cannot take is planned on the others, the rest idle") {
  // Four V100-16GB in one node and two in another; GPT-3 1.3B at 16,384 tokens a sample in fp16,
  // one pipeline stage. At tp 2 a device needs 27 GiB of its 14.3 usable, so only tp 4 fits,
  // and tp 4 replicas lie inside a node: the one replica of devices 0-3, devices 4-5 idle
  // (without the pipeline of whole replicas whale-plan said that the model does not fit).
  const plan::Cluster cluster = test::four_and_two_nodes("v100-sxm2-16gb");
  plan::Model model = test::shipped_model("gpt3-1.3b");
  model.training.precision = plan::Precision::fp16;
  plan::set_sequence(model, 16384, plan::Precision::fp16, "--sequence");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 8;
  o.hints.max_pipeline_depth = 1;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  REQUIRE(r.best().plan.stages.size() == 1);
  const plan::Stage& stage = r.best().plan.stages.front();
  CHECK(stage.devices == std::vector<int>{0, 1, 2, 3});
  CHECK(stage.tp == 4);
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].devices == std::vector<int>{4, 5});
  CHECK(r.idle[0].reason.rfind("the fastest plans found run tensor-parallel replicas inside nodes", 0) == 0);
  CHECK(r.best().label == "p1 tp[v100-sxm2-16gb:4] (2 devices idle)");
  CHECK_NOTHROW(plan::validate_plan(r.best().plan));
}

TEST_CASE("nodes joined by a slow network: the plan on fewer nodes is found where it is faster, the rest idle") {
  // GPT-3 1.3B at 8 samples on four nodes of two A100s. Over 1 Gb/s Ethernet every plan of all
  // eight spends most of its step waiting for the network (1.3 B gradients, or the pipeline's
  // activations, cross it every step): one node alone, dp 2, trains faster. Over 200 Gb/s
  // InfiniBand the best plan of all eight computes for 80% of its step, more than half the
  // devices' summed peak, so no half of them can be faster and none is searched.
  const plan::Model model = test::shipped_model("gpt3-1.3b");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 8;
  const plan::Cluster slow =
      plan::load_cluster(test::temp_file("four_pairs_slow.yaml", four_pairs("{kind: ethernet, bandwidth_gbps: 1, latency_us: 50}")));
  const plan::PlanResult r = plan::search_plans(slow, model, simulator, o);
  CHECK(plan::used_devices(r.best().plan) == std::set<int>{0, 1});
  CHECK(r.best().label == "p1 tp[a100-sxm4-80gb:1] on devices 0-1");
  REQUIRE(r.idle.size() == 1);
  CHECK(r.idle[0].devices == std::vector<int>{2, 3, 4, 5, 6, 7});
  CHECK(r.idle[0].reason.rfind("using every device, the best plan found", 0) == 0);
  // Faster than the best plan of all eight: the search without the comparison, which (as the
  // comparison's own searches) does not look for fewer nodes.
  plan::PlannerOptions all = o;
  all.compare = false;
  const plan::PlanResult on_eight = plan::search_plans(slow, model, simulator, all);
  CHECK(plan::used_devices(on_eight.best().plan).size() == 8);
  CHECK(r.best().estimate.step_time_s < on_eight.best().estimate.step_time_s);
  CHECK(r.best().estimate.step_time_s <= r.baseline.estimate.step_time_s);
  // Under `max_pipeline_depth: 1` the idle reason names a plan of one stage on every device, not
  // the baseline's pipeline of four, which honours the exclusions alone.
  plan::PlannerOptions one_stage = o;
  one_stage.hints.max_pipeline_depth = 1;
  const plan::PlanResult shallow = plan::search_plans(slow, model, simulator, one_stage);
  CHECK(plan::used_devices(shallow.best().plan) == std::set<int>{0, 1});
  REQUIRE(shallow.idle.size() == 1);
  CHECK(shallow.idle[0].reason.rfind("using every device, the best plan found (p1 ", 0) == 0);
  CHECK(shallow.baseline.plan.stages.size() == 4);

  const plan::Cluster fast = plan::load_cluster(
      test::temp_file("four_pairs_fast.yaml", four_pairs("{kind: infiniband, bandwidth_gbps: 200, latency_us: 5}")));
  const plan::PlanResult f = plan::search_plans(fast, model, simulator, o);
  CHECK(plan::used_devices(f.best().plan).size() == 8);
  CHECK(f.idle.empty());
  for (const plan::RankedPlan& p : f.ranked) CHECK(p.label.find(" on devices ") == std::string::npos);

  // Ranked by cost per token, part of a model's nodes costs as much per unit of peak as all of
  // them, so it can beat the best plan of all eight wherever that plan spends any of its step
  // outside compute (20% here): the halves are searched whatever the network, and one node,
  // dp 2, is the cheapest per token.
  o.objective = plan::Objective::cost;
  const plan::PlanResult c = plan::search_plans(fast, model, simulator, o);
  CHECK(plan::used_devices(c.best().plan) == std::set<int>{0, 1});
  REQUIRE(c.idle.size() == 1);
  CHECK(c.idle[0].reason.rfind("using every device, the best plan found", 0) == 0);
  CHECK(c.idle[0].reason.find("per 1M tokens") != std::string::npos);
  CHECK(plan::plan_cost(c.best().plan, c.best().estimate).usd_per_million_tokens <
        plan::plan_cost(f.best().plan, f.best().estimate).usd_per_million_tokens);
}

TEST_CASE("a node behind a slow link is left out: the first half of a model's nodes, rounded up, is searched") {
  // Two nodes of two A100s on 200 Gb/s InfiniBand and a third (two A100s, two T4s) behind
  // 1 Gb/s Ethernet. Every plan of all eight waits on the slow link; the A100s' three nodes,
  // halved and rounded up, give the first two nodes: GPT-2 350M at 8 samples trains there in two
  // stages of dp 2, faster than on one node (a halving rounded down would stop there) or on all.
  const plan::Cluster cluster = plan::load_cluster(test::temp_file("two_pairs_and_mixed.yaml", R"(name: two-pairs-and-mixed
nodes:
  - name: a
    count: 2
    devices: [{model: a100-sxm4-80gb, count: 2}]
    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}
  - name: mixed
    devices: [{model: a100-sxm4-80gb, count: 2}, {model: t4, count: 2}]
    intra_link: {kind: pcie, bandwidth_gbps: 128, latency_us: 5}
    network: {kind: ethernet, bandwidth_gbps: 1, latency_us: 50}
)"));
  const plan::Model model = test::shipped_model("gpt2-350m");
  const sim::Simulator simulator;
  plan::PlannerOptions o;
  o.global_batch = 8;
  const plan::PlanResult r = plan::search_plans(cluster, model, simulator, o);
  CHECK(plan::used_devices(r.best().plan) == std::set<int>{0, 1, 2, 3});
  CHECK(r.best().label.find(" on devices 0-3") != std::string::npos);
  REQUIRE(r.idle.size() == 2);
  for (const plan::IdleDevices& e : r.idle) CHECK(e.reason.rfind("using every device, the best plan found", 0) == 0);
  plan::PlannerOptions one_node = o;
  one_node.hints.exclude_devices = {2, 3, 4, 5, 6, 7};
  const plan::PlanResult on_one = plan::search_plans(cluster, model, simulator, one_node);
  CHECK(r.best().estimate.step_time_s < on_one.best().estimate.step_time_s);
  CHECK(r.best().estimate.step_time_s < r.baseline.estimate.step_time_s);
}

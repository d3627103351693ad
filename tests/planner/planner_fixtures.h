// File: planner_fixtures.h
// Shared helpers of the planner tests: shipped specs by name, temporary YAML files, and the
// exhaustive reference search over the planner's own space.
#pragma once

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"
#include "whale/plan/planner.h"
#include "whale/plan/search_experts.h"
#include "whale/plan/search_layout.h"
#include "whale/plan/search_mixed_tp.h"
#include "whale/plan/search_space.h"
#include "whale/sim/simulator.h"

namespace whale::test {

inline plan::Cluster shipped_cluster(const std::string& name) {
  return plan::load_cluster(std::string(WHALE_SOURCE_DIR) + "/configs/clusters/" + name + ".yaml");
}

inline plan::Model shipped_model(const std::string& name) {
  return plan::load_model(std::string(WHALE_SOURCE_DIR) + "/configs/models/" + name + ".yaml");
}

/// Writes `text` to a file under the build folder and returns its path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(WHALE_BINARY_DIR) + "/test_planner_" + name;
  std::ofstream(path) << text;
  return path;
}

/// The best simulated step time over every (structure, choice, layer split) of the planner's
/// space, each laid out by build_layout and ranked by the simulator alone (no pruning, no
/// budget), and over the mixed-tp and expert-layout variants of the best of them
/// (search_mixed_tp.h, search_experts.h), which the planner simulates too.
inline double exhaustive_best_step_s(const plan::Cluster& cluster, const plan::Model& model,
                                     int global_batch, long* candidates) {
  const sim::Simulator simulator;
  plan::SpaceLimits limits;
  for (const plan::Device& d : cluster.devices) limits.devices.push_back(d.id);
  plan::AnalyticModel analytic(cluster, model);
  plan::Plan scratch;
  scratch.cluster = cluster;
  scratch.model = model;
  double best = std::numeric_limits<double>::infinity();
  plan::Plan best_plan;
  *candidates = 0;
  for (const plan::Structure& s : plan::enumerate_structures(cluster, model, limits)) {
    for (const plan::Choice& c : plan::enumerate_choices(s, model, global_batch, limits)) {
      // Both layer splits where a group runs several stages (the planner simulates both).
      for (const plan::Split split : {plan::Split::per_stage, plan::Split::per_group}) {
        if (split == plan::Split::per_group && c.schedule.chunks == 1) continue;
        plan::LayoutRules rules;
        rules.split = split;
        const plan::Layout layout = plan::build_layout(analytic, s, c, rules);
        if (!layout.fits) continue;
        plan::apply_layout(scratch, c, layout);
        plan::validate_plan(scratch);
        const plan::Estimate e = simulator.evaluate(scratch, plan::EvaluateOptions{});
        ++*candidates;
        if (e.fits && e.step_time_s < best) {
          best = e.step_time_s;
          best_plan = scratch;
        }
      }
    }
  }
  std::vector<plan::Plan> variants = plan::mixed_tp_variants(best_plan, 16);
  for (plan::Plan& variant : plan::expert_layout_variants(best_plan, 16)) variants.push_back(std::move(variant));
  for (const plan::Plan& variant : variants) {
    const plan::Estimate e = simulator.evaluate(variant, plan::EvaluateOptions{});
    if (e.fits) best = std::min(best, e.step_time_s);
  }
  return best;
}

/// Search limits that allow every device of `cluster`.
inline plan::SpaceLimits every_device(const plan::Cluster& cluster) {
  plan::SpaceLimits limits;
  for (const plan::Device& d : cluster.devices) limits.devices.push_back(d.id);
  return limits;
}

/// A cluster, a model and a global batch to search.
struct SearchCase {
  plan::Cluster cluster;
  plan::Model model;
  int batch;
};

/// Two nodes: 4 A100-80GB (device ids 0-3), then 4 V100-32GB (4-7).
inline constexpr const char* kTwoNodeMix = R"(name: a100-v100-small
nodes:
  - name: a
    devices: [{model: a100-sxm4-80gb, count: 4}]
    intra_link: {kind: nvlink, bandwidth_gbps: 4800, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 200, latency_us: 5}
  - name: v
    devices: [{model: v100-sxm2-32gb, count: 4}]
    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 100, latency_us: 5}
)";

/// Two nodes of one device model on NVLink, 4 devices (ids 0-3) and 2 (ids 4-5), joined by
/// 100 Gb/s InfiniBand: a tp 4 replica fits the first node only.
inline plan::Cluster four_and_two_nodes(const std::string& device_model) {
  std::string nodes;
  for (const auto& [name, count] : {std::pair<const char*, int>{"four", 4}, {"two", 2}}) {
    nodes += std::string("  - name: ") + name + "\n    devices: [{model: " + device_model +
             ", count: " + std::to_string(count) + "}]\n" +
             "    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}\n"
             "    network: {kind: infiniband, bandwidth_gbps: 100, latency_us: 5}\n";
  }
  return plan::load_cluster(temp_file("four_and_two_" + device_model + ".yaml", "name: four-and-two\nnodes:\n" + nodes));
}

/// Small searches with heterogeneity and memory pressure: the tiny model on cpu-local-8,
/// mixed-node and two A100 + V100 nodes (kTwoNodeMix), and GPT-3 6.7B on the latter, where
/// recomputation and sharding rungs bind and layouts overflow.
inline std::vector<SearchCase> small_search_cases() {
  const plan::Model tiny = shipped_model("tiny");
  const plan::Cluster two_node = plan::load_cluster(temp_file("small_two_node_mix.yaml", kTwoNodeMix));
  return {{shipped_cluster("cpu-local-8"), tiny, 24},
          {shipped_cluster("mixed-node"), tiny, 16},
          {two_node, tiny, 32},
          {two_node, shipped_model("gpt3-6.7b"), 16}};
}

/// One node of 2 V100-SXM2-16GB (no bf16 units: the precision advice plans fp16 too), priced.
inline constexpr const char* kTinyV100 = R"(name: tiny-v100
nodes:
  - name: v
    devices: [{model: v100-sxm2-16gb, count: 2, price_per_hour_usd: 3.06}]
    intra_link: {kind: nvlink, bandwidth_gbps: 2400, latency_us: 3}
    network: {kind: infiniband, bandwidth_gbps: 100, latency_us: 5}
)";

}  // namespace whale::test

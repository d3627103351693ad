// File: test_deepep_exchange.cpp
// DeepEP's deduplicated token exchange (deepep_exchange.h) by hand: the chance that a token
// reaches a rank or a node, one node and two, uneven expert counts, and the moe_dispatcher
// field of a plan (read, refused, written, exported, and priced on a tiny MoE step).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim_fixtures.h"
#include "whale/plan/error.h"
#include "whale/plan/export.h"
#include "whale/sim/collective_cost.h"
#include "whale/sim/deepep_exchange.h"
#include "whale/sim/simulator.h"

using namespace whale;
using namespace whale::sim;

namespace {

/// Writes a file under <build>/deepep-sim/ and returns its path.
std::string scratch(const std::string& name, const std::string& text) {
  const std::string folder = std::string(WHALE_BINARY_DIR) + "/deepep-sim";
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/" + name) << text;
  return folder + "/" + name;
}

// A tiny llama of two MoE blocks (4 experts of width 6, top 2), fp32, on 4 CPUs of one node.
void write_specs() {
  scratch("cluster.yaml", test::kFourCpuClusterYaml);
  scratch("model.yaml", test::kTinyMoeLlamaYaml);
  scratch("dense.yaml",
          "name: dense\nfamily: llama\nlayers: 2\nhidden: 8\nheads: 2\nffn_hidden: 16\nsequence: 4\nvocabulary: 10\n"
          "training: {global_batch: 8, precision: fp32}\n");
}

std::string plan_text(const std::string& model, const std::string& dispatcher, int ep) {
  return "cluster: cluster.yaml\nmodel: " + model + "\nmicro_batch_size: 4\nmicro_batches: 2\n" + dispatcher +
         "schedule: 1f1b\nstages:\n  - {layers: [0, 3], devices: \"0-3\", tp: 1" +
         (ep > 1 ? ", ep: " + std::to_string(ep) : std::string()) + "}\n";
}

plan::Plan load(const std::string& name, const std::string& text) {
  return plan::load_plan(scratch(name, text), std::string(WHALE_SOURCE_DIR) + "/profiles");
}

}  // namespace

TEST_CASE("deepep: the chance that a token's top_k experts reach a set of held experts") {
  // 4 experts, top 2 (6 pairs): 1 held misses 3 pairs, 2 held miss 1, 3 held miss none.
  CHECK(expert_reach_probability(4, 2, 1) == doctest::Approx(0.5));
  CHECK(expert_reach_probability(4, 2, 2) == doctest::Approx(5.0 / 6));
  CHECK(expert_reach_probability(4, 2, 3) == 1);
  CHECK(expert_reach_probability(4, 2, 0) == 0);
  // One expert per rank: top_k / experts, what NCCL's all-to-all sends each member.
  CHECK(expert_reach_probability(8, 2, 1) == doctest::Approx(0.25));
  // Qwen3-235B-A22B (128 experts, top 8): 16 experts (ep 8) and 32 (a node of ep 32, 4 each).
  CHECK(expert_reach_probability(128, 8, 16) == doctest::Approx(0.66745).epsilon(1e-4));
  CHECK(expert_reach_probability(128, 8, 32) == doctest::Approx(0.90719).epsilon(1e-4));
}

TEST_CASE("deepep: one node, two nodes and uneven counts by hand") {
  // 2 nodes x 2 devices; intra 1e11 B/s, 1 us; the node NIC (4e10 B/s) shared by 2: 2e10 each, 10 us.
  const plan::Cluster c = test::make_cluster(2, 2, test::flat_profile(1e14, 1e12), test::link(1e11, 1e-6),
                                             test::link(4e10, 1e-5));
  // One node of 4, one expert each of 4, top 2: each token reaches each other member with
  // chance 1/2, what NCCL's all-to-all of its 2 copies (1.6e9 B) sends each member.
  const plan::Cluster one = test::make_cluster(1, 4, test::flat_profile(1e14, 1e12), test::link(1e11, 1e-6),
                                               test::link(4e10, 1e-5));
  CHECK(deepep_exchange_s(one, {0, 1, 2, 3}, {1, 1, 1, 1}, 2, 8e8) == doctest::Approx(3e-6 + 3 * 0.5 * 8e8 / 1e11));
  CHECK(deepep_exchange_s(one, {0, 1, 2, 3}, {1, 1, 1, 1}, 2, 8e8) ==
        doctest::Approx(all_to_all_s(one, {0, 1, 2, 3}, 1.6e9)));
  // Two members holding 2 experts each: a token reaches the other with chance 5/6.
  CHECK(deepep_exchange_s(c, {0, 1}, {2, 2}, 2, 8e8) == doctest::Approx(1e-6 + (5.0 / 6) * 8e8 / 1e11));
  // Two nodes of 2 experts each: each token crosses to the other node with chance 5/6, once
  // (NCCL: 2 members x 1.6e9 / 4 each); inside the node its own and the forwarded tokens,
  // 2 x 0.5 x 8e8 over the intra link (8 ms): the network leg bounds it.
  CHECK(deepep_exchange_s(c, {0, 1, 2, 3}, {1, 1, 1, 1}, 2, 8e8) ==
        doctest::Approx(1e-5 + (5.0 / 6) * 8e8 / 2e10));
  const Seconds nccl = all_to_all_s(c, {0, 1, 2, 3}, 1.6e9);
  CHECK(nccl == doctest::Approx(2 * (4e8 / 2e10 + 1e-5)));
  CHECK(deepep_exchange_s(c, {0, 1, 2, 3}, {1, 1, 1, 1}, 2, 8e8) < nccl);
  // Uneven counts [3, 1] on one node: tokens reach the 3 experts' rank always, the other's with
  // chance 1/2; the busier sender bounds it.
  CHECK(deepep_exchange_s(c, {0, 1}, {3, 1}, 2, 8e8) == doctest::Approx(1e-6 + 8e8 / 1e11));
  CHECK(deepep_exchange_s(c, {0}, {4}, 2, 8e8) == 0);
  CHECK(deepep_exchange_s(c, {0, 1}, {2, 2}, 2, 0) == 0);
}

TEST_CASE("deepep: a plan's moe_dispatcher read, refused, written, exported and priced") {
  write_specs();
  const plan::Plan alltoall4 = load("a4.yaml", plan_text("model.yaml", "", 4));
  const plan::Plan deepep4 = load("d4.yaml", plan_text("model.yaml", "moe_dispatcher: deepep\n", 4));
  CHECK(alltoall4.moe_dispatcher == plan::MoeDispatcher::alltoall);
  CHECK(deepep4.moe_dispatcher == plan::MoeDispatcher::deepep);
  // Written only when not the default; the Megatron export asks for the flex dispatcher.
  CHECK(plan::plan_to_yaml(deepep4, false).find("moe_dispatcher: deepep") != std::string::npos);
  CHECK(plan::plan_to_yaml(alltoall4, false).find("moe_dispatcher") == std::string::npos);
  const std::string megatron = plan::export_text(deepep4, plan::Framework::megatron);
  CHECK(megatron.find("--moe-token-dispatcher-type flex\n") != std::string::npos);
  CHECK(megatron.find("--moe-flex-dispatcher-backend deepep\n") != std::string::npos);
  // One expert per rank moves what NCCL's all-to-all moves: the same step. Two experts per
  // rank (ep 2): a token whose two experts sit on one rank goes there once, a faster step.
  const Simulator sim;
  CHECK(sim.evaluate(deepep4, {}).step_time_s == doctest::Approx(sim.evaluate(alltoall4, {}).step_time_s));
  const plan::Plan alltoall2 = load("a2.yaml", plan_text("model.yaml", "", 2));
  const plan::Plan deepep2 = load("d2.yaml", plan_text("model.yaml", "moe_dispatcher: deepep\n", 2));
  CHECK(sim.evaluate(deepep2, {}).step_time_s < sim.evaluate(alltoall2, {}).step_time_s);
  // Bad input: an unknown name, and a dispatcher for a dense model.
  CHECK_THROWS_WITH_AS(load("bad.yaml", plan_text("model.yaml", "moe_dispatcher: nccl\n", 4)),
                       doctest::Contains("moe_dispatcher: unknown dispatcher 'nccl'"), Error);
  CHECK_THROWS_WITH_AS(load("dense-deepep.yaml", plan_text("dense.yaml", "moe_dispatcher: deepep\n", 1)),
                       doctest::Contains("moe_dispatcher: moe_dispatcher deepep needs a mixture-of-experts model"), Error);
}

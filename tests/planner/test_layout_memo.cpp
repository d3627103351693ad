// File: test_layout_memo.cpp
// build_layout with a LayoutMemo shared by a whole search gives the layouts it gives without
// one, bit for bit, whatever came before (other choices, structures, rungs and splits, and the
// memo forgetting once it is full).
#include <doctest/doctest.h>

#include <random>

#include "planner_fixtures.h"
#include "whale/plan/layout_memo.h"

using namespace whale;

namespace {

void check_same(const plan::Layout& a, const plan::Layout& b) {
  REQUIRE(a.fits == b.fits);
  CHECK(a.estimate_s == b.estimate_s);
  CHECK(a.other_split_estimate_s == b.other_split_estimate_s);
  CHECK(a.split == b.split);
  CHECK(a.rungs == b.rungs);
  REQUIRE(a.stages.size() == b.stages.size());
  for (size_t s = 0; s < a.stages.size(); ++s) {
    CHECK(a.stages[s].first_layer == b.stages[s].first_layer);
    CHECK(a.stages[s].end_layer == b.stages[s].end_layer);
    CHECK(a.stages[s].recompute == b.stages[s].recompute);
    CHECK(a.stages[s].shard_optimizer == b.stages[s].shard_optimizer);
    CHECK(a.stages[s].shard_gradients == b.stages[s].shard_gradients);
  }
  CHECK(a.shortfall.need_bytes == b.shortfall.need_bytes);
  CHECK(a.shortfall.device == b.shortfall.device);
}

}  // namespace

TEST_CASE("a shared layout memo changes no layout") {
  const plan::Cluster two_node = plan::load_cluster(test::temp_file("memo_two_node_mix.yaml", test::kTwoNodeMix));
  struct Case {
    plan::Cluster cluster;
    plan::Model model;
    int batch;
  };
  // The second binds memory: rungs, and layouts that do not fit.
  const std::vector<Case> cases = {{test::shipped_cluster("cpu-local-8"), test::shipped_model("tiny"), 24},
                                   {two_node, test::shipped_model("gpt3-6.7b"), 16}};
  std::mt19937 random(20261123);
  long laid_out = 0, misfits = 0, roles = 0;
  for (const Case& c : cases) {
    plan::SpaceLimits limits;
    for (const plan::Device& d : c.cluster.devices) limits.devices.push_back(d.id);
    plan::AnalyticModel analytic(c.cluster, c.model);
    plan::LayoutMemo memo;
    for (const plan::Structure& s : plan::enumerate_structures(c.cluster, c.model, limits)) {
      for (const plan::Choice& choice : plan::enumerate_choices(s, c.model, c.batch, limits)) {
        // As the search asks: the plain rules, then now and then raised rungs or one split.
        for (int variant = 0; variant < 2; ++variant) {
          plan::LayoutRules rules;
          if (variant == 1) {
            if (random() % 2) continue;
            rules.split = random() % 2 ? plan::Split::per_stage : plan::Split::per_group;
            for (size_t g = 0; g < s.groups.size(); ++g) rules.min_rung.push_back(static_cast<int>(random() % 4));
          }
          const plan::Layout shared = plan::build_layout(analytic, s, choice, rules, &memo);
          const plan::Layout alone = plan::build_layout(analytic, s, choice, rules);
          CAPTURE(s.label);
          check_same(shared, alone);
          ++laid_out;
          misfits += !alone.fits;
          roles += static_cast<long>(s.groups.size());
        }
      }
    }
  }
  CHECK(laid_out > 1000);
  CHECK(misfits > 0);
  CHECK(roles > 4 * static_cast<long>(plan::LayoutMemo::kMaxRoles));  // it forgets several times
}

TEST_CASE("a layout memo keys groups by their values, not their devices") {
  plan::LayoutMemo memo;
  const plan::Link nvlink{"nvlink", 2.4e12, 1e-6}, pcie{"pcie", 2.56e11, 5e-6};
  plan::GroupSpec a{{0, 1, 2, 3}, 2, {{"a100", nvlink}}, {0, 0}, plan::DataParallelRing{2, 1, nvlink, pcie}};
  plan::GroupSpec on_other_node = a;
  on_other_node.devices = {8, 9, 10, 11};
  on_other_node.dp_ring.intra = pcie;   // range costs do not read it
  plan::GroupSpec other_tp = a;
  other_tp.tp = 4;
  other_tp.replica_kind = {0};
  plan::GroupSpec other_link = a;
  other_link.kinds[0].intra_link = pcie;
  plan::GroupSpec mixed{{0, 1, 2, 3}, 2, {{"a100", nvlink}, {"v100", nvlink}}, {0, 1}, a.dp_ring};
  plan::GroupSpec mixed_swapped{{0, 1, 2, 3}, 2, {{"v100", nvlink}, {"a100", nvlink}}, {0, 1}, a.dp_ring};
  const int id = memo.group_id(a);
  CHECK(memo.group_id(on_other_node) == id);
  CHECK(memo.group_id(other_tp) != id);
  CHECK(memo.group_id(other_link) != id);
  CHECK(memo.group_id(other_link) != memo.group_id(other_tp));
  CHECK(memo.group_id(mixed) != memo.group_id(mixed_swapped));   // replica order sets the shares
  CHECK(memo.group_id(a) == id);
}

TEST_CASE("a layout memo keeps range costs by role and forgets them when full") {
  plan::LayoutMemo memo;
  const int a = 0, b = 1;   // group ids
  const std::vector<int> ids = memo.role_ids({{a, 4, false, 2, 1, 0}, {b, 4, false, 2, 1, 0}, {a, 4, false, 1, 1, 0}}, 10);
  CHECK(ids == std::vector<int>{0, 1, 2});
  CHECK(memo.find(ids[0], 2, 5) == nullptr);
  CHECK(memo.remember(ids[0], 2, 5, 1.5) == 1.5);
  REQUIRE(memo.find(ids[0], 2, 5) != nullptr);
  CHECK(*memo.find(ids[0], 2, 5) == 1.5);
  CHECK(memo.find(ids[0], 2, 6) == nullptr);   // same row, another end
  CHECK(memo.find(ids[1], 2, 5) == nullptr);   // another role
  // The same role again has the same id and keeps its costs.
  CHECK(memo.role_ids({{a, 4, false, 2, 1, 0}}, 10) == std::vector<int>{0});
  CHECK(*memo.find(0, 2, 5) == 1.5);
  memo.remember_partition({0, 3}, {0, 4, 10});
  REQUIRE(memo.partition({0, 3}) != nullptr);
  CHECK(*memo.partition({0, 3}) == std::vector<int>{0, 4, 10});
  // Filling it: roles beyond its room start it over.
  std::vector<plan::GroupRole> many;
  for (size_t i = 0; i < plan::LayoutMemo::kMaxRoles; ++i) many.push_back({b, 8 + static_cast<int>(i), false, 1, 1, 0});
  CHECK(memo.role_ids(many, 10).front() == 0);
  CHECK(memo.find(0, 2, 5) == nullptr);
  CHECK(memo.partition({0, 3}) == nullptr);
}

// File: test_comm_groups.cpp
// plan_comm_groups: the exact roles and rank lists of every tiny plan's communicators, and
// groups_of_rank.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/exec/runtime/comm_groups.h"
#include "whale/plan/plan.h"

using namespace whale::exec;

namespace {

/// Each group as "role s<stage> [r0,r1,...]", in order.
std::vector<std::string> describe(const std::vector<CommGroup>& groups) {
  std::vector<std::string> out;
  for (const CommGroup& g : groups) {
    std::string text = std::string(to_string(g.role)) + " s" + std::to_string(g.stage) + " [";
    for (std::size_t i = 0; i < g.ranks.size(); ++i)
      text += (i ? "," : "") + std::to_string(g.ranks[i]);
    out.push_back(text + "]");
  }
  return out;
}

std::vector<std::string> groups_of(const std::string& plan_file) {
  const whale::plan::Plan plan = whale::plan::load_plan(plan_file);
  return describe(plan_comm_groups(plan, RankLayout(plan)));
}

std::vector<std::string> groups_of_tiny(const std::string& name) {
  return groups_of("configs/plans/tiny/" + name + ".yaml");
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("mixed tp: a group per finest piece's holders and one over the stage") {
  // Replica 0 at tp 2 on ranks 0-1, replica 1 at tp 1 on rank 2, which holds both pieces.
  CHECK(groups_of_tiny("mixed-tp") ==
        Names{"tensor s0 [0,1]", "data s0 [0,2]", "data s0 [1,2]", "data s0 [0,1,2]"});
  // The bridge to rank 3: activations from each replica's tp rank 0, gradients to every rank.
  CHECK(groups_of("configs/plans/tiny-sgd/mixed-tp-pp2.yaml") ==
        Names{"tensor s0 [0,1]", "data s0 [0,2]", "data s0 [1,2]", "data s0 [0,1,2]",
              "bridge s0 [0,3]", "bridge s0 [2,3]", "bridge s0 [1,3]"});
}

TEST_CASE("single rank and pure data or tensor parallel plans") {
  CHECK(groups_of_tiny("single") == Names{});
  CHECK(groups_of_tiny("dp2") == Names{"data s0 [0,1]"});
  CHECK(groups_of_tiny("dp2-zero") == Names{"data s0 [0,1]"});
  CHECK(groups_of_tiny("dp3-uneven") == Names{"data s0 [0,1,2]"});
  CHECK(groups_of_tiny("tp2") == Names{"tensor s0 [0,1]"});
}

TEST_CASE("sequence parallelism and ZeRO-2 use the groups of tensor and data parallelism") {
  CHECK(groups_of_tiny("tp2-sp") == Names{"tensor s0 [0,1]"});
  CHECK(groups_of_tiny("tp2-sp-bf16") == Names{"tensor s0 [0,1]"});
  CHECK(groups_of_tiny("dp2-zero2") == Names{"data s0 [0,1]"});
  CHECK(groups_of_tiny("dp3-uneven-zero2") == Names{"data s0 [0,1,2]"});
  CHECK(groups_of_tiny("tp2-pp2-sp") == Names{"tensor s0 [0,1]", "pipeline s0 [0,2]",
                                              "pipeline s0 [1,3]", "tensor s1 [2,3]"});
  CHECK(groups_of_tiny("tp2-dp2-sp-zero2") ==
        Names{"tensor s0 [0,1]", "tensor s0 [2,3]", "data s0 [0,2]", "data s0 [1,3]"});
}

TEST_CASE("pipelines: one pair per neighbour, shared by repeated boundaries") {
  CHECK(groups_of_tiny("pp2-1f1b") == Names{"pipeline s0 [0,1]"});
  CHECK(groups_of_tiny("pp2-gpipe") == Names{"pipeline s0 [0,1]"});
  CHECK(groups_of_tiny("pp2-1f1b-recompute") == Names{"pipeline s0 [0,1]"});
  // Stages 0..7 on groups 0,1,2,3,0,1,2,3: boundary 3->4 joins ranks 3 and 0; 4->5 repeats
  // 0->1 and so on.
  CHECK(groups_of_tiny("pp4-interleaved") ==
        Names{"pipeline s0 [0,1]", "pipeline s1 [1,2]", "pipeline s2 [2,3]",
              "pipeline s3 [0,3]"});
  // Wave: stages on groups 0,1,1,0; 1->2 stays on group 1 (in memory), 2->3 repeats [0,1].
  CHECK(groups_of_tiny("wave") == Names{"pipeline s0 [0,1]"});
}

TEST_CASE("hybrid dp2 x tp2 x pp2: tensor, data and four pipeline pairs") {
  const Names expected = {"tensor s0 [0,1]",   "tensor s0 [2,3]",   "data s0 [0,2]",
                          "data s0 [1,3]",     "pipeline s0 [0,4]", "pipeline s0 [1,5]",
                          "pipeline s0 [2,6]", "pipeline s0 [3,7]", "tensor s1 [4,5]",
                          "tensor s1 [6,7]",   "data s1 [4,6]",     "data s1 [5,7]"};
  CHECK(groups_of_tiny("hybrid-8") == expected);
  CHECK(groups_of_tiny("hybrid-8-zero-recompute") == expected);
}

TEST_CASE("bridges between stages of different dp, tp and shares") {
  // Stage 0: dp3 (ranks 0-2); stage 1: tp2 (ranks 3-4); stage 2: dp2 (ranks 5-6).
  // 0->1: every tp rank of the receiver reads each sender's samples: 6 pairs; gradients go
  // back from tp rank 0 (pairs already listed). 1->2: activations from rank 3 (tp rank 0) to
  // 5 and 6; gradients from 5 and 6 to both tp ranks 3 and 4.
  CHECK(groups_of_tiny("bridges") ==
        Names{"data s0 [0,1,2]", "bridge s0 [0,3]", "bridge s0 [0,4]", "bridge s0 [1,3]",
              "bridge s0 [1,4]", "bridge s0 [2,3]", "bridge s0 [2,4]", "tensor s1 [3,4]",
              "bridge s1 [3,5]", "bridge s1 [3,6]", "bridge s1 [4,5]", "bridge s1 [4,6]",
              "data s2 [5,6]"});
}

TEST_CASE("groups_of_rank keeps the global order") {
  const whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny/hybrid-8.yaml");
  const std::vector<CommGroup> all = plan_comm_groups(plan, RankLayout(plan));
  CHECK(describe(groups_of_rank(all, 1)) ==
        Names{"tensor s0 [0,1]", "data s0 [1,3]", "pipeline s0 [1,5]"});
  CHECK(describe(groups_of_rank(all, 6)) ==
        Names{"pipeline s0 [2,6]", "tensor s1 [6,7]", "data s1 [4,6]"});
}

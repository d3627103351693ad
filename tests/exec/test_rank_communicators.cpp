// File: test_rank_communicators.cpp
// rank_groups: the groups every rank of a dp2 x tp2 x pp2 plan with ZeRO and a tied token table
// joins, and their transports: NCCL for every tensor, data (gradient buckets, ZeRO) and
// tied-embedding group of GPU ranks, never MPI; the host bridge where GPU and CPU ranks mix;
// MPI everywhere under --device cpu.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/exec/runtime/rank_communicators.h"
#include "whale/plan/plan.h"

using namespace whale::exec;

namespace {

/// tiny-llama hybrid-uneven: stage 0 on devices 0-3 and stage 1 on 4-7, each dp2 x tp2 with
/// ZeRO-1; the llama head is tied to the token table across the two stages. Every device is
/// made a GPU, except `cpu_devices`, which get a CPU profile.
whale::plan::Plan hybrid_plan(const std::vector<int>& cpu_devices = {}) {
  whale::plan::Plan plan = whale::plan::load_plan("configs/plans/tiny-llama/hybrid-uneven.yaml");
  const std::string cpu_model = plan.cluster.devices.front().model;
  whale::plan::DeviceProfile gpu = plan.cluster.profile_of(0);
  gpu.kind = "gpu";
  gpu.name = "gpu";
  plan.cluster.profiles["gpu"] = gpu;
  for (whale::plan::Device& d : plan.cluster.devices) d.model = "gpu";
  for (int d : cpu_devices) plan.cluster.devices.at(d).model = cpu_model;
  return plan;
}

/// Each group as "purpose s<stage> [r0,r1,...] transport", in creation order.
std::vector<std::string> describe(const std::vector<RankGroup>& groups) {
  std::vector<std::string> out;
  for (const RankGroup& g : groups) {
    std::string text = std::string(to_string(g.purpose)) + " s" + std::to_string(g.stage) + " [";
    for (std::size_t i = 0; i < g.ranks.size(); ++i)
      text += (i ? "," : "") + std::to_string(g.ranks[i]);
    out.push_back(text + "] " + to_string(g.transport));
  }
  return out;
}

using Names = std::vector<std::string>;

/// describe() of the groups of `rank` of `plan`.
Names groups_of(const whale::plan::Plan& plan, int rank, bool cpu_device = false) {
  const RankLayout layout(plan);
  return describe(rank_groups(plan, layout, rank_device_kinds(plan, layout, cpu_device), rank));
}

}  // namespace

TEST_CASE("GPU ranks: tensor, data and tied-embedding groups all go to NCCL, none to MPI") {
  const whale::plan::Plan plan = hybrid_plan();
  REQUIRE(plan.stages[0].shard_optimizer);  // ZeRO's all-gather rides the data group
  const RankLayout layout(plan);
  const std::vector<DeviceKind> kinds = rank_device_kinds(plan, layout, false);
  CHECK(kinds == std::vector<DeviceKind>(8, DeviceKind::gpu));
  CHECK(groups_of(plan, 0) == Names{"tensor s0 [0,1] nccl", "data s0 [0,2] nccl",
                                    "tied-embedding s0 [0,2,4,6] nccl"});
  CHECK(groups_of(plan, 5) ==
        Names{"tensor s1 [4,5] nccl", "data s1 [5,7] nccl",
              "tied-embedding s0 [1,3,5,7] nccl"});
  for (int rank = 0; rank < layout.world_size(); ++rank) {
    const std::vector<RankGroup> groups = rank_groups(plan, layout, kinds, rank);
    CHECK(groups.size() == 3);
    for (const RankGroup& g : groups) CHECK(g.transport == TransportKind::nccl);
  }
}

TEST_CASE("--device cpu: every group of the same plan goes to MPI") {
  const whale::plan::Plan plan = hybrid_plan();
  CHECK(rank_device_kinds(plan, RankLayout(plan), true) ==
        std::vector<DeviceKind>(8, DeviceKind::cpu));
  CHECK(groups_of(plan, 6, true) ==
        Names{"tensor s1 [6,7] mpi", "data s1 [4,6] mpi",
              "tied-embedding s0 [0,2,4,6] mpi"});
}

TEST_CASE("a CPU rank among GPUs: its groups take the host bridge, all-GPU groups keep NCCL") {
  const whale::plan::Plan plan = hybrid_plan({2});
  CHECK(rank_device_kinds(plan, RankLayout(plan), false)[2] == DeviceKind::cpu);
  CHECK(groups_of(plan, 0) ==
        Names{"tensor s0 [0,1] nccl", "data s0 [0,2] host-bridge",
              "tied-embedding s0 [0,2,4,6] host-bridge"});
  CHECK(groups_of(plan, 2) ==
        Names{"tensor s0 [2,3] host-bridge", "data s0 [0,2] host-bridge",
              "tied-embedding s0 [0,2,4,6] host-bridge"});
  CHECK(groups_of(plan, 7) ==
        Names{"tensor s1 [6,7] nccl", "data s1 [5,7] nccl",
              "tied-embedding s0 [1,3,5,7] nccl"});
}

TEST_CASE("the tied table's group: the ranks holding the same rows, or every rank of both stages") {
  // Split alike (both stages at tp 2): tp rank 0 of each replica of both stages, and tp rank 1.
  whale::plan::Plan plan = hybrid_plan();
  REQUIRE(plan.tied_table_copies_split_alike());
  CHECK(groups_of(plan, 4).back() == "tied-embedding s0 [0,2,4,6] nccl");
  CHECK(groups_of(plan, 3).back() == "tied-embedding s0 [1,3,5,7] nccl");
  // The head stage at tp 1 (four replicas) holds other rows than the table's stage at tp 2:
  // every rank of both stages sums the whole table.
  plan.stages[1].tp = 1;
  plan.stages[1].shares = {1, 1, 1, 1};
  REQUIRE(!plan.tied_table_copies_split_alike());
  for (int rank : {0, 3, 5})
    CHECK(groups_of(plan, rank).back() == "tied-embedding s0 [0,1,2,3,4,5,6,7] nccl");
}

TEST_CASE("a single rank joins no group") {
  CHECK(groups_of(whale::plan::load_plan("configs/plans/tiny/single.yaml"), 0).empty());
  CHECK(std::string(to_string(GroupPurpose::tied_embedding)) == "tied-embedding");
}

TEST_CASE("mixture-of-experts stages: expert-parallel and expert-data groups after the others") {
  using whale::plan::load_plan;
  // Folded: each tensor group is an expert-parallel group; devices 0 and 2 (1 and 3) hold the
  // same experts.
  const whale::plan::Plan folded = load_plan("configs/plans/tiny-moe/tp2-dp2-ep2-folded.yaml");
  CHECK(groups_of(folded, 0, true) == Names{"tensor s0 [0,1] mpi", "data s0 [0,2] mpi",
                                            "expert-parallel s0 [0,1] mpi",
                                            "expert-data s0 [0,2] mpi"});
  CHECK(groups_of(folded, 3, true) == Names{"tensor s0 [2,3] mpi", "data s0 [1,3] mpi",
                                            "expert-parallel s0 [2,3] mpi",
                                            "expert-data s0 [1,3] mpi"});
  // expert_tp = tp 2, ep 2: a tp rank's replicas exchange; expert dp 1 has no group.
  const whale::plan::Plan tp2_ep2 = load_plan("configs/plans/tiny-moe/tp2-ep2.yaml");
  CHECK(groups_of(tp2_ep2, 1, true) ==
        Names{"tensor s0 [0,1] mpi", "data s0 [1,3] mpi", "expert-parallel s0 [1,3] mpi"});
  // tp 4, ep 2 x expert_tp 2: expert-tp-major, so devices 0 and 2 exchange.
  const whale::plan::Plan tp4 = load_plan("configs/plans/tiny-moe/tp4-ep2-etp2-folded.yaml");
  CHECK(groups_of(tp4, 2, true) == Names{"tensor s0 [0,1,2,3] mpi", "expert-parallel s0 [0,2] mpi"});
  CHECK(std::string(to_string(GroupPurpose::expert_data)) == "expert-data");
  // expert_tp 2 above tp 1, ep 2: devices 0 and 1 hold experts 0-1 (a half of each), 2 and 3
  // experts 2-3; tokens travel over ep between 1 and 3, then 0 and 1 gather each other's rows.
  const whale::plan::Plan wide = load_plan("configs/plans/tiny-moe/dp4-ep2-etp2.yaml");
  CHECK(groups_of(wide, 1, true) == Names{"data s0 [0,1,2,3] mpi", "expert-parallel s0 [1,3] mpi",
                                          "expert-token-gather s0 [0,1] mpi"});
  // expert_tp 4 over two replicas of tp 2: each tp rank's pair across the replicas gathers.
  const whale::plan::Plan sp = load_plan("configs/plans/tiny-moe/tp2-dp2-etp4-sp.yaml");
  CHECK(groups_of(sp, 3, true) == Names{"tensor s0 [2,3] mpi", "data s0 [1,3] mpi",
                                        "expert-token-gather s0 [1,3] mpi"});
}

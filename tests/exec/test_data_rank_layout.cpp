// File: test_data_rank_layout.cpp
// RankLayout: ranks follow ascending device ids; roles, tp and dp groups; world-size check.
#include <doctest/doctest.h>

#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/error.h"

using namespace whale::exec;

namespace {

/// Stage 0: devices 7,3,5,1 as dp2 x tp2; stage 1: devices 9 and 4 as dp2.
whale::plan::Plan bridge_plan() {
  whale::plan::Plan plan;
  plan.source_file = "plan.yaml";
  plan.micro_batch_size = 4;
  plan.schedule.kind = whale::plan::ScheduleKind::one_f_one_b;
  whale::plan::Stage a;
  a.first_layer = 0;
  a.end_layer = 2;
  a.devices = {7, 3, 5, 1};
  a.tp = 2;
  a.shares = {2, 2};
  whale::plan::Stage b;
  b.first_layer = 2;
  b.end_layer = 4;
  b.devices = {9, 4};
  b.shares = {3, 1};
  plan.stages = {a, b};
  return plan;
}

}  // namespace

TEST_CASE("rank r runs the r-th smallest device id the plan uses") {
  const whale::plan::Plan plan = bridge_plan();
  const RankLayout layout(plan);
  CHECK(layout.world_size() == 6);
  const std::vector<int> devices = {1, 3, 4, 5, 7, 9};
  for (int r = 0; r < 6; ++r) CHECK(layout.device_of_rank(r) == devices[r]);
  CHECK(layout.rank_of_device(5) == 3);
  CHECK(layout.rank_of_device(2) == -1);
  CHECK(layout.group_of_rank(2) == 1);   // device 4 runs stage 1
  const StageRole role = layout.roles(1).at(0);  // device 3: replica 0, tp rank 1 of stage 0
  CHECK(role.stage == 0);
  CHECK(role.replica == 0);
  CHECK(role.tp_rank == 1);
  CHECK(layout.tp_group(0, 1) == std::vector<int>{3, 0});  // devices 5, 1
  CHECK(layout.dp_group(0, 0) == std::vector<int>{4, 3});  // devices 7, 5
  CHECK(layout.dp_group(1, 0) == std::vector<int>{5, 2});  // devices 9, 4
}

TEST_CASE("a world size that differs from the plan's devices is an error naming both") {
  const whale::plan::Plan plan = bridge_plan();
  const RankLayout layout(plan);
  CHECK_NOTHROW(layout.check_world_size(6));
  try {
    layout.check_world_size(4);
    FAIL("no error");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()) ==
          "plan.yaml: stages: the plan uses 6 devices but MPI runs 4 ranks (hint: run `mpirun "
          "-np 6 whale-run ...`)");
  }
}

// File: test_engine_chunks.cpp
// Step times of interleaved-1f1b and wave programs (p = 2 groups, v = 2 chunks) against
// makespans worked out by hand from the schedule program: 1 ms forwards, 2 ms backwards, free links.
#include <doctest/doctest.h>

#include "sim_fixtures.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/simulator.h"

using namespace whale;
namespace test = whale::sim::test;

namespace {

// Four one-layer stages of 1 ms forward and 2 ms backward per sample (a 1e11-flop GEMM at
// 1e14 flop/s), no parameters, no activations to send; stage s on the device of its group.
plan::Plan chunked_plan(plan::ScheduleKind kind, int micro_batches) {
  const plan::Cluster c = test::make_cluster(1, 2, test::flat_profile(1e14, 1e12),
                                             test::link(1e11, 0), test::link(1e10, 0));
  const plan::Layer layer = test::gemm_layer(1e5, 1e3, 5e2, 0);
  plan::Plan p = test::pipeline_plan(c, {layer, layer, layer, layer}, kind, micro_batches);
  p.schedule.chunks = 2;
  for (int s = 0; s < 4; ++s) p.stages[s].devices = {p.group_of_stage(s)};
  return p;
}

}  // namespace

// The timelines below follow generate_schedule(kind, 2, 2, 2); F(s,j) and B(s,j) are the forward
// and backward of stage s, micro-batch j, as [start, end] in ms; each waits for its group and
// for its input from the other group (sends are free).
TEST_CASE("interleaved-1f1b, p = 2, v = 2, m = 2: the hand-worked makespan of 15 ms") {
  // Group 0 runs stages 0, 2; group 1 runs stages 1, 3.
  // g0: F(0,0)[0,1] F(0,1)[1,2] F(2,0)[2,3] F(2,1)[3,4] B(2,0)[6,8] B(2,1)[9,11]
  //     B(0,0)[11,13] B(0,1)[13,15]
  // g1: F(1,0)[1,2] F(1,1)[2,3] F(3,0)[3,4] B(3,0)[4,6] F(3,1)[6,7] B(3,1)[7,9]
  //     B(1,0)[9,11] B(1,1)[11,13]
  const plan::Estimate est =
      sim::Simulator().evaluate(chunked_plan(plan::ScheduleKind::interleaved_1f1b, 2), {});
  CHECK(est.step_time_s == doctest::Approx(15e-3).epsilon(1e-12));
  CHECK(est.breakdown.compute_s == doctest::Approx(12e-3).epsilon(1e-12));  // 2 * 2 * (1 + 2) per device
}

TEST_CASE("wave, p = 2, v = 2, m = 2: the hand-worked makespan of 16 ms") {
  // The V placement: group 0 runs stages 0, 3; group 1 runs stages 1, 2 (no send between 1 and 2).
  // g0: F(0,0)[0,1] F(0,1)[1,2] F(3,0)[3,4] B(3,0)[4,6] F(3,1)[6,7] B(3,1)[7,9]
  //     B(0,0)[10,12] B(0,1)[14,16]
  // g1: F(1,0)[1,2] F(2,0)[2,3] F(1,1)[3,4] F(2,1)[4,5] B(2,0)[6,8] B(1,0)[8,10]
  //     B(2,1)[10,12] B(1,1)[12,14]
  const plan::Estimate est =
      sim::Simulator().evaluate(chunked_plan(plan::ScheduleKind::wave, 2), {});
  CHECK(est.step_time_s == doctest::Approx(16e-3).epsilon(1e-12));
  CHECK(est.breakdown.compute_s == doctest::Approx(12e-3).epsilon(1e-12));
}

// File: test_memory_walk_repeats.cpp
// The memory model walks plan::ComputeSequences, which leaves out the steady state's repeated
// rounds of 1f1b, interleaved 1f1b and zb-h1: over every schedule kind, pipeline depth and
// micro-batch count below, with stages of different sizes and every framework variant of the
// walk (gradients freed after the step, cached stage buffers), each group's memory from the
// shortened sequence equals the walk over its whole program, field by field and to the bit.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "sim_fixtures.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"

using namespace whale;
namespace test = whale::sim::test;

namespace {

// p groups of one device, v chunks: stage s holds layer s, whose parameters and kept
// activations grow with s (so that stages keep different bytes per micro-batch).
plan::Plan walk_plan(plan::ScheduleKind kind, int p, int v, int micro_batches) {
  const plan::Cluster c = test::make_cluster(1, p, test::flat_profile(1e14, 1e12), test::link(1e11, 0),
                                             test::link(1e10, 0));
  std::vector<plan::Layer> layers;
  for (int s = 0; s < p * v; ++s) {
    plan::Layer layer = test::gemm_layer(10, 10, 10 + s, 0, 1000 + 100 * s);
    layer.activation_bytes_replicated = 10 + 3 * s;
    layer.activation_bytes_split = 40 + 7 * (s % 3);
    layers.push_back(layer);
  }
  plan::Plan plan = test::pipeline_plan(c, layers, kind, micro_batches);
  plan.schedule.chunks = v;
  for (int s = 0; s < p * v; ++s) plan.stages[s].devices = {plan.group_of_stage(s)};
  return plan;
}

void check_same(const sim::MemoryBreakdown& shortened, const sim::MemoryBreakdown& whole) {
  CHECK(shortened.total_bytes() == whole.total_bytes());
  CHECK(shortened.activations_bytes == whole.activations_bytes);
  CHECK(shortened.gradients_bytes == whole.gradients_bytes);
  CHECK(shortened.peak_in_flight == whole.peak_in_flight);
}

}  // namespace

TEST_CASE("the memory walk over the steady state's first rounds equals the walk over the whole program") {
  struct Shape {
    plan::ScheduleKind kind;
    int chunks;
  };
  const std::vector<Shape> shapes = {{plan::ScheduleKind::one_f_one_b, 1}, {plan::ScheduleKind::gpipe, 1},
                                     {plan::ScheduleKind::zb_h1, 1},       {plan::ScheduleKind::interleaved_1f1b, 2},
                                     {plan::ScheduleKind::interleaved_1f1b, 3}, {plan::ScheduleKind::wave, 2}};
  long compared = 0, shortened_groups = 0;
  for (const Shape& shape : shapes) {
    for (int p : {1, 2, 3, 4, 5, 8}) {
      for (int m : {1, 2, 3, 5, 8, 24, 40, 64, 97, 240, 301}) {
        if (shape.kind == plan::ScheduleKind::interleaved_1f1b && (p < 2 || m % p != 0)) continue;
        if (shape.kind == plan::ScheduleKind::wave && p < 2) continue;
        for (int variant = 0; variant < 3; ++variant) {
          plan::Plan plan = walk_plan(shape.kind, p, shape.chunks, m);
          for (auto& [name, profile] : plan.cluster.profiles) {
            profile.framework_memory.gradients_freed_after_step = variant == 1;
            profile.framework_memory.stage_buffer_cache = variant == 2;
          }
          const plan::ScheduleProgram program = plan::generate_schedule(plan);
          const plan::ComputeSequences sequences(plan);
          for (const plan::GroupProgram& group : program.groups) {
            CAPTURE(static_cast<int>(shape.kind));
            CAPTURE(shape.chunks);
            CAPTURE(p);
            CAPTURE(m);
            CAPTURE(variant);
            CAPTURE(group.group);
            long visited = 0;
            const sim::InstructionSequence shortened = [&](const sim::InstructionVisitor& visit) {
              sequences.for_each(group.group, [&](const plan::Instruction& ins) {
                ++visited;
                visit(ins);
              });
            };
            check_same(sim::replica_memory(plan, group.stages, shortened, 0),
                       sim::replica_memory(plan, group, 0));
            long computes = 0;
            for (const plan::Instruction& ins : group.instructions) {
              using K = plan::InstructionKind;
              computes += ins.kind == K::forward || ins.kind == K::backward || ins.kind == K::backward_input ||
                          ins.kind == K::backward_weight;
            }
            CHECK(visited <= computes);
            shortened_groups += visited < computes;
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared > 1000);
  CHECK(shortened_groups > 200);   // the long steady states are shortened
}

TEST_CASE("1f1b at 301 micro-batches on 2 groups: group 0 visits 18 of its 602 compute ops") {
  // One warm-up forward; of the 300 steady rounds (a period of p v = 2) the first 2 x 2 + 2 = 6,
  // then (300 - 6 - 2) / 2 x 2 = 292 left out, then the last 2; one cool-down backward:
  // 1 + 2 x 8 + 1 = 18 ops.
  const plan::Plan plan = walk_plan(plan::ScheduleKind::one_f_one_b, 2, 1, 301);
  const plan::ComputeSequences sequences(plan);
  std::vector<plan::Instruction> seen;
  sequences.for_each(0, [&](const plan::Instruction& ins) { seen.push_back(ins); });
  REQUIRE(seen.size() == 18);
  CHECK(seen[0].kind == plan::InstructionKind::forward);
  CHECK(seen[0].micro_batch == 0);
  // Round 7 resumes at forward 1 + 6 + 292 = 299 and backward 6 + 292 = 298.
  CHECK(seen[13].kind == plan::InstructionKind::forward);
  CHECK(seen[13].micro_batch == 299);
  CHECK(seen[14].micro_batch == 298);
  CHECK(seen[17].micro_batch == 300);
}

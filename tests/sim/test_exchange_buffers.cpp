// File: test_exchange_buffers.cpp
// The buffers a step's gradient exchanges hold at its end, as whale-run holds them: a mixed-tp
// stage's fp32 packs (every gradient the device holds, once more) and, where the two copies of
// a tied token table are split unlike, an fp32 buffer of the whole table; none where the
// copies are split alike (summed in place).
#include <doctest/doctest.h>

#include <string>

#include "whale/plan/plan.h"
#include "whale/plan/schedule_program.h"
#include "whale/sim/memory_model.h"

using namespace whale;

namespace {

plan::Plan shipped_plan(const std::string& name) {
  return plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/" + name + ".yaml");
}

}  // namespace

TEST_CASE("a mixed-tp stage holds its gradients once more in the exchange's pack buffers") {
  // The tiny GPT (434,816 parameters) over a tp-2 replica and a tp-1 one, fp32, on the cpu
  // profile (whale-run's buffer cache: the packs come on top of every cached buffer).
  const plan::Plan p = shipped_plan("tiny/mixed-tp");
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  const sim::MemoryBreakdown wide = sim::replica_memory(p, program.groups[0], 0);
  const sim::MemoryBreakdown whole = sim::replica_memory(p, program.groups[0], 1);
  CHECK(whole.gradients_bytes == 434816 * 4);
  CHECK(whole.gradient_bucket_bytes == 434816 * 4);
  // At tp 2 a device holds 220,032 of them: half the split ones and all 5,248 replicated ones
  // (two layernorms and two biases per block, 384 each; the final layernorm, 128; the
  // position table, 2,048).
  CHECK(wide.gradients_bytes == 220032 * 4);
  CHECK(wide.gradient_bucket_bytes == 220032 * 4);
}

TEST_CASE("a tied token table's copies: summed in place when split alike, else through the table") {
  // The tiny Llama (vocabulary 256, hidden 64) in two stages of two tp-2 replicas each: the
  // copies are split alike and no device holds a buffer for them.
  plan::Plan p = shipped_plan("tiny-llama/hybrid-uneven");
  REQUIRE(p.tied_table_copies_split_alike());
  for (const plan::GroupProgram& group : plan::generate_schedule(p).groups)
    CHECK(sim::replica_memory(p, group, 0).gradient_bucket_bytes == 0);
  // The head's stage at tp 1 (four replicas): each device of both stages sums the whole
  // table, 256 x 64 fp32.
  p.stages[1].tp = 1;
  p.stages[1].shares = {1, 1, 1, 1};
  plan::validate_plan(p);
  REQUIRE(!p.tied_table_copies_split_alike());
  const plan::ScheduleProgram program = plan::generate_schedule(p);
  REQUIRE(program.groups.size() == 2);
  CHECK(sim::replica_memory(p, program.groups[0], 1).gradient_bucket_bytes == 256 * 64 * 4);
  CHECK(sim::replica_memory(p, program.groups[1], 0).gradient_bucket_bytes == 256 * 64 * 4);
}

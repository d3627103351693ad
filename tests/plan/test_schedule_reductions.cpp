// File: test_schedule_reductions.cpp
// The data-parallel gradient reduction in schedule programs: reduce_bucket right after a
// stage's last backward, wait_reductions right before its optimizer step, nothing for dp = 1,
// the same rule in every generator.
#include <doctest/doctest.h>

#include <vector>

#include "whale/plan/gradient_buckets.h"
#include "whale/plan/schedule_analysis.h"
#include "whale/plan/schedule_program.h"

using whale::plan::Instruction;
using whale::plan::InstructionKind;
using whale::plan::Plan;
using whale::plan::ScheduleKind;

namespace {

using K = InstructionKind;

/// A plan of `stages` stages of two 1e5-parameter fp32 layers each (400000 gradient bytes a
/// layer), on groups of `dp` devices each, with 0.25 MiB buckets: one bucket per layer.
Plan plan_of(ScheduleKind kind, int stages, int chunks, int micro_batches,
             const std::vector<int>& dp) {
  Plan plan;
  plan.precision = whale::plan::Precision::fp32;
  plan.gradient_bucket_mib = 0.25;
  plan.schedule.kind = kind;
  plan.schedule.chunks = chunks;
  plan.micro_batches = micro_batches;
  for (int s = 0; s < stages; ++s) {
    for (int l = 0; l < 2; ++l) {
      whale::plan::Layer layer;
      layer.parameters = 1e5;
      plan.model.layers.push_back(layer);
    }
    whale::plan::Stage stage;
    stage.first_layer = 2 * s;
    stage.end_layer = 2 * s + 2;
    stage.devices.resize(dp.at(s));
    plan.stages.push_back(stage);
  }
  return plan;
}

}  // namespace

TEST_CASE("1f1b, p=2, m=2: stage 0 (dp 2) reduces two buckets, stage 1 (dp 1) none") {
  const Plan plan = plan_of(ScheduleKind::one_f_one_b, 2, 1, 2, {2, 1});
  REQUIRE(whale::plan::gradient_buckets(plan, 0).size() == 2);
  CHECK(whale::plan::gradient_buckets(plan, 0)[0].first_layer == 1);  // bucket 0: layer 1
  CHECK(whale::plan::gradient_buckets(plan, 0)[1].first_layer == 0);  // bucket 1: layer 0
  const auto program = generate_schedule(plan);
  const std::vector<Instruction> group0 = {
      {K::forward, 0, 0},           {K::send_activation, 0, 0},   {K::forward, 0, 1},
      {K::send_activation, 0, 1},   {K::recv_gradient, 0, 0},     {K::backward, 0, 0},
      {K::recv_gradient, 0, 1},     {K::backward, 0, 1},          {K::reduce_bucket, 0, -1, 0},
      {K::reduce_bucket, 0, -1, 1}, {K::wait_reductions, 0, -1},  {K::optimizer_step, 0, -1}};
  const std::vector<Instruction> group1 = {
      {K::recv_activation, 1, 0}, {K::forward, 1, 0},         {K::backward, 1, 0},
      {K::send_gradient, 1, 0},   {K::recv_activation, 1, 1}, {K::forward, 1, 1},
      {K::backward, 1, 1},        {K::send_gradient, 1, 1},   {K::optimizer_step, 1, -1}};
  CHECK(program.groups[0].instructions == group0);
  CHECK(program.groups[1].instructions == group1);
}

TEST_CASE("buckets come before the last backward's send of the input gradient") {
  const Plan plan = plan_of(ScheduleKind::gpipe, 2, 1, 2, {1, 2});
  const std::vector<Instruction> group1 = {
      {K::recv_activation, 1, 0},  {K::forward, 1, 0},           {K::recv_activation, 1, 1},
      {K::forward, 1, 1},          {K::backward, 1, 1},          {K::send_gradient, 1, 1},
      {K::backward, 1, 0},         {K::reduce_bucket, 1, -1, 0}, {K::reduce_bucket, 1, -1, 1},
      {K::send_gradient, 1, 0},    {K::wait_reductions, 1, -1},  {K::optimizer_step, 1, -1}};
  CHECK(generate_schedule(plan).groups[1].instructions == group1);
}

TEST_CASE("zb-h1: the buckets follow the last weight pass, which completes the gradients") {
  // p = 2, m = 2: group 1 (dp 2) runs F0 B0 F1 B1 W0 W1; group 0 (dp 2) F0 F1 B0 W0 B1 W1.
  const Plan plan = plan_of(ScheduleKind::zb_h1, 2, 1, 2, {2, 2});
  const auto program = generate_schedule(plan);
  const std::vector<Instruction> group1 = {
      {K::recv_activation, 1, 0},  {K::forward, 1, 0},           {K::backward_input, 1, 0},
      {K::send_gradient, 1, 0},    {K::recv_activation, 1, 1},   {K::forward, 1, 1},
      {K::backward_input, 1, 1},   {K::send_gradient, 1, 1},     {K::backward_weight, 1, 0},
      {K::backward_weight, 1, 1},  {K::reduce_bucket, 1, -1, 0}, {K::reduce_bucket, 1, -1, 1},
      {K::wait_reductions, 1, -1}, {K::optimizer_step, 1, -1}};
  CHECK(program.groups[1].instructions == group1);
  whale::plan::check_schedule(program);
}

TEST_CASE("interleaved-1f1b: each stage's buckets follow its own last backward") {
  // p = 2, v = 2: group 0 runs stages 0 and 2. Backwards of group 0 (Megatron's order, m = 2):
  // the last backward of stage 2 is micro-batch 1 before stage 0's backwards finish.
  const Plan plan = plan_of(ScheduleKind::interleaved_1f1b, 4, 2, 2, {2, 2, 2, 2});
  const whale::plan::ScheduleProgram program = generate_schedule(plan);  // kept: code refers into it
  const auto& code = program.groups[0].instructions;
  std::vector<Instruction> reductions;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (code[i].kind != K::reduce_bucket) continue;
    reductions.push_back(code[i]);
    if (code[i].bucket == 0) CHECK(code[i - 1] == Instruction{K::backward, code[i].stage, 1});
  }
  const std::vector<Instruction> expected = {{K::reduce_bucket, 2, -1, 0},
                                             {K::reduce_bucket, 2, -1, 1},
                                             {K::reduce_bucket, 0, -1, 0},
                                             {K::reduce_bucket, 0, -1, 1}};
  CHECK(reductions == expected);
  const std::vector<Instruction> tail(code.end() - 4, code.end());
  const std::vector<Instruction> expected_tail = {{K::wait_reductions, 2, -1},
                                                  {K::optimizer_step, 2, -1},
                                                  {K::wait_reductions, 0, -1},
                                                  {K::optimizer_step, 0, -1}};
  CHECK(tail == expected_tail);
}

TEST_CASE("every generator places the reduction by the same rule, and the programs check") {
  struct Case {
    ScheduleKind kind;
    int stages, chunks, micro_batches;
  };
  for (const Case& c : {Case{ScheduleKind::gpipe, 2, 1, 3}, Case{ScheduleKind::one_f_one_b, 3, 1, 4},
                        Case{ScheduleKind::interleaved_1f1b, 4, 2, 4},
                        Case{ScheduleKind::wave, 4, 2, 4}, Case{ScheduleKind::zb_h1, 3, 1, 5}}) {
    CAPTURE(whale::plan::to_string(c.kind));
    const Plan plan = plan_of(c.kind, c.stages, c.chunks, c.micro_batches,
                              std::vector<int>(c.stages, 2));
    const auto program = generate_schedule(plan);
    whale::plan::check_schedule(program);
    for (const auto& group : program.groups) {
      const auto& code = group.instructions;
      for (int s : group.stages) {
        // The last backward (zb-h1: backward_weight) of s, then reduce_bucket(s, 0), (s, 1);
        // wait before the step.
        const K completing = c.kind == ScheduleKind::zb_h1 ? K::backward_weight : K::backward;
        std::size_t last_backward = 0, step = 0;
        for (std::size_t i = 0; i < code.size(); ++i) {
          if (code[i].kind == completing && code[i].stage == s) last_backward = i;
          if (code[i].kind == K::optimizer_step && code[i].stage == s) step = i;
        }
        REQUIRE(last_backward + 2 < code.size());
        CHECK(code[last_backward + 1] == Instruction{K::reduce_bucket, s, -1, 0});
        CHECK(code[last_backward + 2] == Instruction{K::reduce_bucket, s, -1, 1});
        CHECK(code[step - 1] == Instruction{K::wait_reductions, s, -1});
      }
    }
  }
}

TEST_CASE("the plan's program, reductions placed as it is emitted, equals generate_schedule plus add_gradient_reductions") {
  struct Case {
    ScheduleKind kind;
    int stages, chunks;
  };
  for (const Case& c : {Case{ScheduleKind::gpipe, 3, 1}, Case{ScheduleKind::one_f_one_b, 4, 1},
                        Case{ScheduleKind::interleaved_1f1b, 4, 2}, Case{ScheduleKind::wave, 6, 2},
                        Case{ScheduleKind::zb_h1, 4, 1}}) {
    for (int micro_batches : {2, 4, 8, 12}) {
      // dp 1 on the first stage (no buckets), 2 and 3 elsewhere.
      std::vector<int> dp(c.stages, 2);
      dp.front() = 1;
      dp.back() = 3;
      const Plan plan = plan_of(c.kind, c.stages, c.chunks, micro_batches, dp);
      CAPTURE(whale::plan::to_string(c.kind));
      CAPTURE(micro_batches);
      auto expected = generate_schedule(c.kind, c.stages / c.chunks, c.chunks, micro_batches);
      std::vector<int> buckets(c.stages, 0);
      for (int s = 0; s < c.stages; ++s)
        if (dp[s] > 1) buckets[s] = static_cast<int>(whale::plan::gradient_buckets(plan, s).size());
      whale::plan::add_gradient_reductions(buckets, &expected);
      const auto program = generate_schedule(plan);
      REQUIRE(program.groups.size() == expected.groups.size());
      for (std::size_t g = 0; g < program.groups.size(); ++g) {
        CHECK(program.groups[g].stages == expected.groups[g].stages);
        CHECK(program.groups[g].instructions == expected.groups[g].instructions);
      }
    }
  }
}

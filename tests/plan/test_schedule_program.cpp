// File: test_schedule_program.cpp
// generate_schedule: an instruction list written out by hand, sends only across groups, the
// optimizer tail, the Plan overload, and the errors for impossible shapes. The gradient
// reduction's instructions: test_schedule_reductions.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/schedule_program.h"

using whale::plan::generate_schedule;
using whale::plan::Instruction;
using whale::plan::InstructionKind;
using whale::plan::ScheduleKind;

namespace {

using K = InstructionKind;

std::string error_of(ScheduleKind kind, int p, int v, int m) {
  try {
    generate_schedule(kind, p, v, m);
  } catch (const whale::Error& e) {
    CHECK(e.file() == "");
    CHECK(e.yaml_path() == "schedule");
    return e.what();
  }
  return "no error";
}

int count_kind(const std::vector<Instruction>& code, K kind, int stage) {
  int n = 0;
  for (const auto& in : code) n += in.kind == kind && in.stage == stage;
  return n;
}

}  // namespace

TEST_CASE("1f1b with p=2, m=2 is the hand-written program") {
  const auto program = generate_schedule(ScheduleKind::one_f_one_b, 2, 1, 2);
  REQUIRE(program.groups.size() == 2);
  // Group 0 warms up with p - 0 - 1 = 1 forward, then F1 B0, then cools down with B1.
  const std::vector<Instruction> group0 = {
      {K::forward, 0, 0},        {K::send_activation, 0, 0}, {K::forward, 0, 1},
      {K::send_activation, 0, 1}, {K::recv_gradient, 0, 0},  {K::backward, 0, 0},
      {K::recv_gradient, 0, 1},  {K::backward, 0, 1},        {K::optimizer_step, 0, -1}};
  // Group 1 (the last stage) has no warm-up: F0 B0 F1 B1.
  const std::vector<Instruction> group1 = {
      {K::recv_activation, 1, 0}, {K::forward, 1, 0},  {K::backward, 1, 0},
      {K::send_gradient, 1, 0},   {K::recv_activation, 1, 1}, {K::forward, 1, 1},
      {K::backward, 1, 1},        {K::send_gradient, 1, 1},   {K::optimizer_step, 1, -1}};
  CHECK(program.groups[0].group == 0);
  CHECK(program.groups[0].stages == std::vector<int>{0});
  CHECK(program.groups[0].instructions == group0);
  CHECK(program.groups[1].group == 1);
  CHECK(program.groups[1].stages == std::vector<int>{1});
  CHECK(program.groups[1].instructions == group1);
}

TEST_CASE("gpipe runs every forward, then the backwards in reverse micro-batch order") {
  const auto program = generate_schedule(ScheduleKind::gpipe, 1, 1, 3);
  const std::vector<Instruction> expected = {
      {K::forward, 0, 0},  {K::forward, 0, 1},  {K::forward, 0, 2},
      {K::backward, 0, 2}, {K::backward, 0, 1}, {K::backward, 0, 0},
      {K::optimizer_step, 0, -1}};
  CHECK(program.groups[0].instructions == expected);
}

TEST_CASE("wave sends nothing between consecutive stages on the same group") {
  // p=2, v=2: stages 0,1,2,3 on groups 0,1,1,0. Stages 1 and 2 share group 1.
  const auto program = generate_schedule(ScheduleKind::wave, 2, 2, 4);
  CHECK(program.groups[0].stages == std::vector<int>{0, 3});
  CHECK(program.groups[1].stages == std::vector<int>{1, 2});
  const auto& g1 = program.groups[1].instructions;
  CHECK(count_kind(g1, K::send_activation, 1) == 0);
  CHECK(count_kind(g1, K::recv_activation, 2) == 0);
  CHECK(count_kind(g1, K::recv_gradient, 1) == 0);
  CHECK(count_kind(g1, K::send_gradient, 2) == 0);
  CHECK(count_kind(g1, K::recv_activation, 1) == 4);
  CHECK(count_kind(g1, K::send_activation, 2) == 4);
  const auto& g0 = program.groups[0].instructions;
  CHECK(count_kind(g0, K::send_activation, 0) == 4);
  CHECK(count_kind(g0, K::recv_activation, 3) == 4);
  CHECK(count_kind(g0, K::send_activation, 3) == 0);  // the last stage sends nothing
  CHECK(count_kind(g0, K::recv_gradient, 0) == 4);
}

TEST_CASE("each program ends with a step per stage, last stage first") {
  const auto program = generate_schedule(ScheduleKind::interleaved_1f1b, 2, 3, 2);
  const auto& code = program.groups[1].instructions;  // stages 1, 3, 5
  REQUIRE(code.size() >= 3);
  const std::vector<Instruction> tail(code.end() - 3, code.end());
  const std::vector<Instruction> expected = {
      {K::optimizer_step, 5, -1}, {K::optimizer_step, 3, -1}, {K::optimizer_step, 1, -1}};
  CHECK(tail == expected);
  CHECK(count_kind(code, K::reduce_bucket, 5) == 0);  // shapes carry no dp
}

TEST_CASE("the Plan overload uses the plan's schedule, groups and micro-batches") {
  whale::plan::Plan plan;
  plan.schedule.kind = ScheduleKind::interleaved_1f1b;
  plan.schedule.chunks = 2;
  plan.stages.resize(4);
  plan.micro_batches = 4;
  const auto from_plan = generate_schedule(plan);
  const auto from_shape = generate_schedule(ScheduleKind::interleaved_1f1b, 2, 2, 4);
  REQUIRE(from_plan.groups.size() == 2);
  for (int g = 0; g < 2; ++g) {
    CHECK(from_plan.groups[g].stages == from_shape.groups[g].stages);
    CHECK(from_plan.groups[g].instructions == from_shape.groups[g].instructions);
  }
}

TEST_CASE("the Plan overload names the plan file in its errors") {
  whale::plan::Plan plan;
  plan.source_file = "plans/bad.yaml";
  plan.schedule.kind = ScheduleKind::interleaved_1f1b;
  plan.schedule.chunks = 2;
  plan.stages.resize(4);
  plan.micro_batches = 3;
  try {
    generate_schedule(plan);
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(e.file() == "plans/bad.yaml");
    CHECK(e.yaml_path() == "schedule");
    CHECK(std::string(e.what()).rfind("plans/bad.yaml: schedule: interleaved-1f1b needs", 0) == 0);
  }
  plan.stages.resize(3);  // 3 stages cannot be split into chunks of 2
  try {
    generate_schedule(plan);
    FAIL("expected an error");
  } catch (const whale::Error& e) {
    CHECK(std::string(e.what()) ==
          "plans/bad.yaml: schedule: a stage count divisible by chunks (got 3 stages, chunks 2)");
  }
}

TEST_CASE("impossible shapes are errors naming the schedule") {
  CHECK(error_of(ScheduleKind::one_f_one_b, 0, 1, 4) ==
        "schedule: at least 1 pipeline group (got 0)");
  CHECK(error_of(ScheduleKind::wave, 2, 0, 4) == "schedule: chunks >= 1 (got 0)");
  CHECK(error_of(ScheduleKind::gpipe, 2, 1, 0) == "schedule: micro_batches >= 1 (got 0)");
  CHECK(error_of(ScheduleKind::gpipe, 2, 2, 4) ==
        "schedule: gpipe runs one chunk per group (got chunks 2) "
        "(hint: use interleaved-1f1b or wave for several chunks per group)");
  CHECK(error_of(ScheduleKind::one_f_one_b, 2, 3, 4).find("1f1b runs one chunk per group") !=
        std::string::npos);
  CHECK(error_of(ScheduleKind::interleaved_1f1b, 4, 2, 6) ==
        "schedule: interleaved-1f1b needs micro_batches divisible by the pipeline groups (got 6 "
        "micro-batches over 4 groups) (hint: use a multiple of 4 micro-batches, or 1f1b/wave)");
}

// File: test_schedule_analysis.cpp
// analyze_schedule as a referee: every generated program over a sweep of shapes is valid and
// deadlock-free; hand-broken programs are rejected with a message naming the broken rule.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/plan/error.h"
#include "whale/plan/schedule_analysis.h"

using whale::plan::analyze_schedule;
using whale::plan::check_schedule;
using whale::plan::generate_schedule;
using whale::plan::GroupProgram;
using whale::plan::Instruction;
using whale::plan::InstructionKind;
using whale::plan::ScheduleKind;
using whale::plan::ScheduleProgram;

namespace {

using K = InstructionKind;

std::string rejection(const ScheduleProgram& program) {
  try {
    check_schedule(program);
  } catch (const whale::Error& e) {
    CHECK(e.yaml_path() == "schedule");
    return e.what();
  }
  return "accepted";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ScheduleProgram one_group(std::vector<int> stages, std::vector<Instruction> code) {
  ScheduleProgram program;
  program.groups.push_back(GroupProgram{0, std::move(stages), std::move(code)});
  return program;
}

}  // namespace

TEST_CASE("every generated program is valid and deadlock-free over a sweep of shapes") {
  const ScheduleKind kinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,
                                ScheduleKind::interleaved_1f1b, ScheduleKind::wave,
                                ScheduleKind::zb_h1};
  int checked = 0;
  for (ScheduleKind kind : kinds) {
    const bool chunked = kind == ScheduleKind::interleaved_1f1b || kind == ScheduleKind::wave;
    for (int p = 1; p <= 5; ++p) {
      for (int v = 1; v <= (chunked ? 4 : 1); ++v) {
        for (int m = 1; m <= 10; ++m) {
          if (kind == ScheduleKind::interleaved_1f1b && m % p != 0) continue;
          CAPTURE(to_string(kind));
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          const ScheduleProgram program = generate_schedule(kind, p, v, m);
          REQUIRE(program.groups.size() == static_cast<size_t>(p));
          for (const auto& gp : program.groups) {
            for (int s : gp.stages) CHECK(whale::plan::group_of_stage(kind, p, v, s) == gp.group);
          }
          const auto a = analyze_schedule(program, {1.0, 2.0});  // throws if invalid
          CHECK(a.makespan_s >= v * m * 3.0);
          ++checked;
        }
      }
    }
  }
  // gpipe, 1f1b, zb-h1: 5 x 10 each; interleaved: m % p == 0 leaves 10+5+3+2+2 per v; wave:
  // 5 x 4 x 10.
  CHECK(checked == 3 * 50 + 4 * 22 + 200);
}

TEST_CASE("generation is deterministic") {
  const auto a = generate_schedule(ScheduleKind::wave, 4, 3, 7);
  const auto b = generate_schedule(ScheduleKind::wave, 4, 3, 7);
  for (size_t g = 0; g < a.groups.size(); ++g) {
    CHECK(a.groups[g].instructions == b.groups[g].instructions);
  }
}

TEST_CASE("a receive that waits on a send after the other group's receive is a deadlock") {
  ScheduleProgram program;
  program.groups.push_back(GroupProgram{0,
                                        {0},
                                        {{K::recv_gradient, 0, 0},
                                         {K::forward, 0, 0},
                                         {K::send_activation, 0, 0},
                                         {K::backward, 0, 0}}});
  program.groups.push_back(GroupProgram{1,
                                        {1},
                                        {{K::recv_activation, 1, 0},
                                         {K::forward, 1, 0},
                                         {K::backward, 1, 0},
                                         {K::send_gradient, 1, 0}}});
  CHECK(rejection(program) ==
        "schedule: a deadlock-free program (group 0 waits at instruction 0 recv_gradient stage 0 "
        "micro-batch 0, group 1 waits at instruction 0 recv_activation stage 1 micro-batch 0) "
        "(hint: every receive needs a send that runs earlier in the step)");
}

TEST_CASE("a backward before its forward is rejected") {
  const auto program = one_group({0}, {{K::backward, 0, 0}, {K::forward, 0, 0}});
  CHECK(rejection(program) ==
        "schedule: a valid program (group 0 instruction 0, backward stage 0 micro-batch 0: "
        "runs before its forward)");
}

TEST_CASE("a forward before the previous stage's forward is rejected") {
  const auto program = one_group(
      {0, 1}, {{K::forward, 1, 0}, {K::forward, 0, 0}, {K::backward, 1, 0}, {K::backward, 0, 0}});
  CHECK(contains(rejection(program), "forward stage 1 micro-batch 0: runs before its input"));
}

TEST_CASE("a backward before the next stage's backward is rejected") {
  const auto program = one_group(
      {0, 1}, {{K::forward, 0, 0}, {K::forward, 1, 0}, {K::backward, 0, 0}, {K::backward, 1, 0}});
  CHECK(contains(rejection(program),
                 "backward stage 0 micro-batch 0: runs before its output gradient"));
}

TEST_CASE("duplicates, missing work and misplaced tails are rejected") {
  CHECK(contains(rejection(one_group({0}, {{K::forward, 0, 0}, {K::forward, 0, 0}})),
                 "a second forward"));
  CHECK(rejection(one_group({0}, {{K::forward, 0, 0}, {K::forward, 0, 1}, {K::backward, 0, 1}})) ==
        "schedule: a forward and a backward of every stage and micro-batch (stage 0 micro-batch 0 "
        "lacks its backward)");
  CHECK(contains(rejection(one_group({0}, {{K::forward, 0, 0},
                                           {K::reduce_bucket, 0, -1, 0},
                                           {K::backward, 0, 0}})),
                 "reduces before all backwards of the stage"));
  CHECK(contains(rejection(one_group({0}, {{K::forward, 0, 0},
                                           {K::backward, 0, 0},
                                           {K::reduce_bucket, 0, -1, 1}})),
                 "reduces bucket 1 where bucket 0 comes next"));
  CHECK(contains(rejection(one_group({0}, {{K::forward, 0, 0},
                                           {K::backward, 0, 0},
                                           {K::reduce_bucket, 0, -1, 0},
                                           {K::optimizer_step, 0, -1}})),
                 "steps before wait_reductions"));
  CHECK(contains(rejection(one_group({0}, {{K::forward, 0, 0},
                                           {K::backward, 0, 0},
                                           {K::wait_reductions, 0, -1}})),
                 "waits for reductions never started"));
  CHECK(contains(rejection(one_group(
                     {0}, {{K::forward, 0, 0}, {K::optimizer_step, 0, -1}, {K::backward, 0, 0}})),
                 "steps before all backwards of the stage"));
  CHECK(contains(rejection(one_group({0}, {{K::forward, 1, 0}})), "not one of the group's"));
  CHECK(contains(rejection(one_group({0}, {{K::send_activation, 0, 0}})),
                 "sends before its forward"));
}

TEST_CASE("a stage listed by two groups is rejected") {
  ScheduleProgram program;
  program.groups.push_back(GroupProgram{0, {0}, {}});
  program.groups.push_back(GroupProgram{1, {0}, {}});
  CHECK(rejection(program) == "schedule: stages 0..1 each on one group (group 1 lists stage 0)");
}

TEST_CASE("per-stage costs with weight passes: zb-h1 against 1f1b, by hand") {
  // Stage 0: forward 1, input pass 2, weight pass 1, optimizer 0.5; stage 1: forward 3, input
  // pass 1, weight pass 0.5. zb-h1, group 1: F0 1-4, B0 4-5, F1 5-8, B1 8-9, W0 9-9.5,
  // W1 9.5-10. Group 0: F0 0-1, F1 1-2, B0 waits for the gradient (5) 5-7, W0 7-8, B1 waits (9)
  // 9-11, W1 11-12, optimizer 12-12.5.
  const whale::plan::StageCosts costs{{1.0, 3.0}, {2.0, 1.0}, {0.5, 0.0}, {1.0, 0.5}};
  const auto zb = analyze_schedule(generate_schedule(ScheduleKind::zb_h1, 2, 1, 2), costs);
  CHECK(zb.makespan_s == 12.5);
  CHECK(zb.group_busy_s == std::vector<double>{8.5, 9.0});
  // 1f1b runs each backward whole (3 and 1.5): group 1 F0 1-4, B0 4-5.5, F1 5.5-8.5, B1
  // 8.5-10; group 0 B0 5.5-8.5, B1 10-13, optimizer 13-13.5.
  const auto one = analyze_schedule(generate_schedule(ScheduleKind::one_f_one_b, 2, 1, 2), costs);
  CHECK(one.makespan_s == 13.5);
  CHECK(one.group_busy_s == zb.group_busy_s);
}

TEST_CASE("per-stage costs: 1f1b over two groups, two micro-batches, by hand") {
  // Stage 0: forward 1, backward 2, optimizer 0.5; stage 1: forward 3, backward 1.
  // Group 0: F0 0-1, F1 1-2, B0 waits for stage 1's gradient (5) 5-7, B1 waits (9) 9-11,
  // optimizer 11-11.5. Group 1: F0 1-4, B0 4-5, F1 5-8, B1 8-9.
  const whale::plan::StageCosts costs{{1.0, 3.0}, {2.0, 1.0}, {0.5, 0.0}, {}};
  const auto a = analyze_schedule(generate_schedule(ScheduleKind::one_f_one_b, 2, 1, 2), costs);
  CHECK(a.makespan_s == 11.5);
  CHECK(a.group_busy_s == std::vector<double>{6.5, 8.0});
  // A cost vector shorter than the stages is an error, not a read past its end.
  const whale::plan::StageCosts short_costs{{1.0}, {1.0}, {0.0}, {}};
  CHECK_THROWS_AS(analyze_schedule(generate_schedule(ScheduleKind::one_f_one_b, 2, 1, 2), short_costs),
                  whale::Error);
}

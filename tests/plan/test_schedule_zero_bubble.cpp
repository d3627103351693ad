// File: test_schedule_zero_bubble.cpp
// zb-h1 (ZB-H1 of Qi et al. 2024): hand-written programs for p=2, m=4 and p=4, m=8; the order
// F < B < W per micro-batch and stage over a sweep of shapes; the in-flight peak of 1f1b; and
// the makespan (p-1)(F+B-W) above the work under unit costs, against 1f1b's (p-1)(F+B+W).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "whale/plan/schedule_analysis.h"

using whale::plan::analyze_schedule;
using whale::plan::generate_schedule;
using whale::plan::Instruction;
using whale::plan::InstructionKind;
using whale::plan::ScheduleKind;
using whale::plan::UnitCosts;

namespace {

using K = InstructionKind;

/// A group's compute instructions as "F0 B0 W0 ..." (micro-batch after the pass letter).
std::string compute_order(const std::vector<Instruction>& code) {
  std::string out;
  for (const Instruction& in : code) {
    const char* letter = in.kind == K::forward           ? "F"
                         : in.kind == K::backward_input  ? "B"
                         : in.kind == K::backward_weight ? "W"
                         : in.kind == K::backward        ? "BW"
                                                         : nullptr;
    if (!letter) continue;
    out += (out.empty() ? "" : " ") + std::string(letter) + std::to_string(in.micro_batch);
  }
  return out;
}

}  // namespace

TEST_CASE("zb-h1 with p=2, m=4 is the hand-written program") {
  const auto program = generate_schedule(ScheduleKind::zb_h1, 2, 1, 4);
  REQUIRE(program.groups.size() == 2);
  // Group 0: 1f1b's warm-up of 1 forward; each input pass followed by its own weight pass.
  const std::vector<Instruction> group0 = {
      {K::forward, 0, 0},         {K::send_activation, 0, 0}, {K::forward, 0, 1},
      {K::send_activation, 0, 1}, {K::recv_gradient, 0, 0},   {K::backward_input, 0, 0},
      {K::backward_weight, 0, 0}, {K::forward, 0, 2},         {K::send_activation, 0, 2},
      {K::recv_gradient, 0, 1},   {K::backward_input, 0, 1},  {K::backward_weight, 0, 1},
      {K::forward, 0, 3},         {K::send_activation, 0, 3}, {K::recv_gradient, 0, 2},
      {K::backward_input, 0, 2},  {K::backward_weight, 0, 2}, {K::recv_gradient, 0, 3},
      {K::backward_input, 0, 3},  {K::backward_weight, 0, 3}, {K::optimizer_step, 0, -1}};
  // Group 1: no warm-up; its weight passes lag one micro-batch and W3 fills the cool-down. The
  // input gradient leaves before the weight pass runs.
  const std::vector<Instruction> group1 = {
      {K::recv_activation, 1, 0}, {K::forward, 1, 0},         {K::backward_input, 1, 0},
      {K::send_gradient, 1, 0},   {K::recv_activation, 1, 1}, {K::forward, 1, 1},
      {K::backward_input, 1, 1},  {K::send_gradient, 1, 1},   {K::backward_weight, 1, 0},
      {K::recv_activation, 1, 2}, {K::forward, 1, 2},         {K::backward_input, 1, 2},
      {K::send_gradient, 1, 2},   {K::backward_weight, 1, 1}, {K::recv_activation, 1, 3},
      {K::forward, 1, 3},         {K::backward_input, 1, 3},  {K::send_gradient, 1, 3},
      {K::backward_weight, 1, 2}, {K::backward_weight, 1, 3}, {K::optimizer_step, 1, -1}};
  CHECK(program.groups[0].instructions == group0);
  CHECK(program.groups[1].instructions == group1);
}

TEST_CASE("zb-h1 with p=4, m=8: group g delays its weight passes by g micro-batches") {
  const auto program = generate_schedule(ScheduleKind::zb_h1, 4, 1, 8);
  REQUIRE(program.groups.size() == 4);
  CHECK(compute_order(program.groups[0].instructions) ==
        "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  CHECK(compute_order(program.groups[1].instructions) ==
        "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7");
  CHECK(compute_order(program.groups[2].instructions) ==
        "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7");
  CHECK(compute_order(program.groups[3].instructions) ==
        "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
}

TEST_CASE("zb-h1 runs F, then B, then W of every micro-batch, and holds 1f1b's peak") {
  int checked = 0;
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 13; ++m) {  // m < p, m = p, m not a multiple of p
      CAPTURE(p);
      CAPTURE(m);
      const auto program = generate_schedule(ScheduleKind::zb_h1, p, 1, m);
      for (const auto& gp : program.groups) {
        // Position of each pass of each micro-batch: F < B < W, each exactly once.
        std::vector<int> f(m, -1), b(m, -1), w(m, -1);
        const auto& code = gp.instructions;
        for (int i = 0; i < static_cast<int>(code.size()); ++i) {
          CHECK(code[i].kind != K::backward);
          std::vector<int>* at = code[i].kind == K::forward           ? &f
                                 : code[i].kind == K::backward_input  ? &b
                                 : code[i].kind == K::backward_weight ? &w
                                                                      : nullptr;
          if (!at) continue;
          CHECK((*at)[code[i].micro_batch] == -1);
          (*at)[code[i].micro_batch] = i;
        }
        for (int mb = 0; mb < m; ++mb) {
          CHECK(f[mb] >= 0);
          CHECK(f[mb] < b[mb]);
          CHECK(b[mb] < w[mb]);
        }
      }
      const auto zb = analyze_schedule(program, UnitCosts{1.0, 1.0, 1.0});  // throws if invalid
      const auto ofob = analyze_schedule(generate_schedule(ScheduleKind::one_f_one_b, p, 1, m));
      // In flight from forward to weight pass: p on every group (min(m, p)), 1f1b's peak of
      // the first stage, which holds the most.
      CHECK(zb.peak_in_flight_per_stage[0] == ofob.peak_in_flight_per_stage[0]);
      CHECK(*std::max_element(zb.peak_in_flight_per_stage.begin(),
                              zb.peak_in_flight_per_stage.end()) == std::min(m, p));
      ++checked;
    }
  }
  CHECK(checked == 6 * 13);
}

TEST_CASE("zb-h1's bubble is (p-1)(F+B-W), 1f1b's (p-1)(F+B+W), with m >= p") {
  // F = B = W = 1: ZB-H1 of the paper (Figure 3), one third of 1f1b's bubble.
  const UnitCosts split{1.0, 1.0, 1.0};
  for (int p : {2, 3, 4}) {
    for (int m : {p, 2 * p, 2 * p + 1}) {
      CAPTURE(p);
      CAPTURE(m);
      const auto zb = analyze_schedule(generate_schedule(ScheduleKind::zb_h1, p, 1, m), split);
      const auto ofob = analyze_schedule(generate_schedule(ScheduleKind::one_f_one_b, p, 1, m), split);
      CHECK(zb.makespan_s == 3.0 * m + (p - 1) * (1.0 + 1.0 - 1.0));
      CHECK(ofob.makespan_s == 3.0 * m + (p - 1) * (1.0 + 1.0 + 1.0));
      for (int g = 0; g < p; ++g) CHECK(zb.group_busy_s[g] == 3.0 * m);
    }
  }
  // p = 2, m = 4 by hand, one slot per pass ('.' idle):
  //   g0: F0 F1 .  B0 W0 F2 B1 W1 F3 B2 W2 B3 W3
  //   g1: .  F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 W3    -> 13 = 3m + (p-1)(F+B-W)
  CHECK(analyze_schedule(generate_schedule(ScheduleKind::zb_h1, 2, 1, 4), split).makespan_s == 13.0);
}

TEST_CASE("a weight pass before its input pass, or a lone input pass, is rejected") {
  using whale::plan::check_schedule;
  using whale::plan::GroupProgram;
  using whale::plan::ScheduleProgram;
  auto one_stage = [](std::vector<Instruction> code) {
    ScheduleProgram program;
    program.groups.push_back(GroupProgram{0, {0}, std::move(code)});
    return program;
  };
  auto rejection = [](const ScheduleProgram& program) -> std::string {
    try {
      check_schedule(program);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "accepted";
  };
  CHECK(rejection(one_stage({{K::forward, 0, 0}, {K::backward_weight, 0, 0},
                             {K::backward_input, 0, 0}})).find(
            "a weight pass without its own backward_input before it") != std::string::npos);
  CHECK(rejection(one_stage({{K::forward, 0, 0}, {K::backward, 0, 0},
                             {K::backward_weight, 0, 0}})).find(
            "a weight pass without its own backward_input before it") != std::string::npos);
  CHECK(rejection(one_stage({{K::forward, 0, 0}, {K::backward_input, 0, 0}})).find(
            "micro-batch 0 lacks its backward_weight") != std::string::npos);
  CHECK(rejection(one_stage({{K::forward, 0, 0}, {K::backward_input, 0, 0},
                             {K::backward_weight, 0, 0}})) == "accepted");
}

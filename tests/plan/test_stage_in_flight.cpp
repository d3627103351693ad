// File: test_stage_in_flight.cpp
// The micro-batches in flight the quick estimate charges a stage (in_flight_of) against the
// schedule programs themselves (analyze_schedule's peaks): at or above every stage's peak
// under GPipe, 1F1B and the wave, exactly the most of a group's stages, and the wave's group
// total within one stage's worth of its peak. Interleaved 1F1B's figure is Megatron-LM's,
// the first group's peak spread over its stages.
#include <doctest/doctest.h>

#include <algorithm>

#include "whale/plan/schedule_analysis.h"
#include "whale/plan/schedule_program.h"
#include "whale/plan/stage_in_flight.h"

using namespace whale::plan;

namespace {

ScheduleAnalysis analysis_of(ScheduleKind kind, int p, int v, int m) {
  return analyze_schedule(generate_schedule(kind, p, v, m), UnitCosts{});
}

}  // namespace

TEST_CASE("one chunk per group: GPipe keeps every micro-batch, 1F1B p - g, each at its stage's peak") {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 3 * p; ++m) {
      const ScheduleAnalysis gpipe = analysis_of(ScheduleKind::gpipe, p, 1, m);
      const ScheduleAnalysis one_f_one_b = analysis_of(ScheduleKind::one_f_one_b, p, 1, m);
      for (int g = 0; g < p; ++g) {
        CHECK(in_flight_of(Schedule{ScheduleKind::gpipe, 1}, p, g, m) == gpipe.peak_in_flight_per_stage[g]);
        CHECK(in_flight_of(Schedule{ScheduleKind::one_f_one_b, 1}, p, g, m) == one_f_one_b.peak_in_flight_per_stage[g]);
      }
    }
  }
  // Hand-checked: 4 groups, 8 micro-batches: 1F1B's group 1 holds 3.
  CHECK(in_flight_of(Schedule{ScheduleKind::one_f_one_b, 1}, 4, 1, 8) == 3);
}

TEST_CASE("the wave: each stage charged the most any stage of its group holds") {
  long checked = 0;
  for (int p = 2; p <= 9; ++p) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = 1; m <= 4 * p + 3; ++m) {
        const ScheduleProgram program = generate_schedule(ScheduleKind::wave, p, v, m);
        const ScheduleAnalysis a = analyze_schedule(program, UnitCosts{});
        for (int g = 0; g < p; ++g) {
          const int charged = in_flight_of(Schedule{ScheduleKind::wave, v}, p, g, m);
          int most = 0;
          for (int s : program.groups[g].stages) most = std::max(most, a.peak_in_flight_per_stage[s]);
          CHECK(charged == most);
          // The group's stages peak together: v stages charged as much cover the group's peak,
          // and overshoot it by less than one stage's charge.
          CHECK(v * charged >= a.peak_in_flight_per_group[g]);
          CHECK(v * charged - a.peak_in_flight_per_group[g] < charged);
          ++checked;
        }
      }
    }
  }
  // Three chunk counts x the sum over p = 2..9 of p groups x (4p + 3) micro-batch counts.
  CHECK(checked == 3 * (4 * 284 + 3 * 44));
  // Hand-checked: 9 groups, 4 chunks, 48 micro-batches: the last group's four stages hold 9
  // micro-batches each at once (36 pairs); Megatron's interleaved figure would charge 3.
  CHECK(in_flight_of(Schedule{ScheduleKind::wave, 4}, 9, 8, 48) == 9);
  CHECK(analysis_of(ScheduleKind::wave, 9, 4, 48).peak_in_flight_per_group[8] == 36);
}

TEST_CASE("interleaved 1F1B: Megatron-LM's figure, the first group's peak spread over its stages") {
  for (int p = 2; p <= 8; ++p) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = p; m <= 4 * p; m += p) {
        const ScheduleAnalysis a = analysis_of(ScheduleKind::interleaved_1f1b, p, v, m);
        const int charged = in_flight_of(Schedule{ScheduleKind::interleaved_1f1b, v}, p, 0, m);
        CHECK(v * charged >= a.peak_in_flight_per_group[0]);
        CHECK(v * charged - a.peak_in_flight_per_group[0] < v);
      }
    }
  }
}

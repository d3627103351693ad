// File: engine.h
// The discrete-event engine: runs a plan's schedule program for every replica unit (one replica
// of a device group; its tp devices behave identically) with a compute stream, a point-to-point
// send stream per unit and a data-parallel stream per group (the devices' communication
// streams, on which gradient buckets reduce). Private to libsim.
#pragma once

#include <cstdint>
#include <vector>

#include "cost_table.h"
#include "whale/plan/plan.h"
#include "whale/plan/schedule_program.h"

namespace whale::sim {

/// Busy and waiting times of one replica unit over the step (per device of the unit).
struct UnitStats {
  int group = 0;
  int replica = 0;
  Seconds end_s = 0;           // its last compute, send or reduction ends
  Seconds compute_s = 0;       // forward + backward + optimizer kernels
  Seconds recompute_s = 0;
  Seconds tp_s = 0;            // TP all-reduces, exposed or not
  Seconds tp_exposed_s = 0;    // the part on the compute stream's critical path
  Seconds pp_s = 0;            // its sends
  Seconds pp_exposed_s = 0;    // compute stream waited while an incoming transfer was in flight
  Seconds dp_s = 0;            // its group's gradient reductions
  Seconds dp_exposed_s = 0;    // compute stream waited for a reduction before an optimizer step
  Flops model_flops = 0;       // model flops it executed (no recomputation)
};

enum class Lane : std::uint8_t { compute, tp, pp, dp, optimizer };
const char* to_string(Lane lane);

/// One recorded interval of a unit. `op`: 'F' forward, 'R' recompute, 'B' backward (or a split
/// backward's input pass), 'W' a split backward's weight pass, 'T' TP all-reduces, 'A'
/// activation send, 'G' gradient send, 'D' DP reduction, 'E' tied-embedding all-reduce, 'Z'
/// all-gather of ZeRO-2's updated weights, 'O' optimizer.
struct UnitEvent {
  int unit = 0;
  Lane lane = Lane::compute;
  char op = 'F';
  int stage = -1;
  int micro_batch = -1;
  int bucket = -1;             // 'D' only: the gradient bucket
  Seconds start_s = 0;
  Seconds duration_s = 0;
};

struct EngineResult {
  Seconds step_time_s = 0;
  std::vector<int> group_first_unit;   // unit id of replica 0 of each group
  std::vector<UnitStats> units;
  std::vector<UnitEvent> events;       // only when recording
  std::uint64_t events_processed = 0;  // queue events plus executed instructions
  int simulated_units = 0;             // units that ran (one per class when merged)
};

/// Runs one step. `tp_overlap` is SimulatorOptions::tp_overlap. With `merge_alike_units` (and
/// no events recorded), runs one unit per class of alike units (alike_units.h) and gives the
/// others its figures: the same result, bit for bit, as running every unit (which it falls
/// back to where the order of the units could matter); events_processed counts what ran.
/// Throws whale::InternalError if the program deadlocks (a schedule generator bug, not bad
/// input).
EngineResult run_engine(const plan::Plan& plan, const plan::ScheduleProgram& program,
                        const CostTable& table, double tp_overlap, bool record_events,
                        bool merge_alike_units);

}  // namespace whale::sim

// File: test_alike_units.cpp
// The engine run once per class of alike replica units (SimulatorOptions::merge_alike_units)
// against the run of every unit: every figure of the estimate bit-identical, on the shipped
// plans under every schedule they allow and at several micro-batch counts, and the merge
// taking place (fewer units run) where a group's replicas are alike.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "whale/plan/plan.h"
#include "whale/sim/simulator.h"

using namespace whale;

namespace {

plan::Plan shipped(const std::string& name) {
  return plan::load_plan(std::string(WHALE_SOURCE_DIR) + "/configs/plans/" + name);
}

plan::Estimate run(const plan::Plan& p, bool merge, sim::SimulationStats* stats) {
  sim::SimulatorOptions options;
  options.merge_alike_units = merge;
  return sim::Simulator(options).evaluate(p, plan::EvaluateOptions{}, stats);
}

/// Every figure of two estimates, compared with == (bit-identical doubles, not approximately).
void check_identical(const plan::Estimate& a, const plan::Estimate& b) {
  CHECK(a.fits == b.fits);
  using Figure = double plan::Estimate::*;
  for (Figure figure : {&plan::Estimate::step_time_s, &plan::Estimate::samples_per_s, &plan::Estimate::mfu,
                        &plan::Estimate::bubble_fraction}) {
    CHECK(a.*figure == b.*figure);
  }
  using Part = double plan::TimeBreakdown::*;
  for (Part part : {&plan::TimeBreakdown::compute_s, &plan::TimeBreakdown::recompute_s,
                    &plan::TimeBreakdown::tp_comm_s, &plan::TimeBreakdown::pp_comm_s,
                    &plan::TimeBreakdown::dp_comm_s, &plan::TimeBreakdown::exposed_comm_s,
                    &plan::TimeBreakdown::idle_s}) {
    CHECK(a.breakdown.*part == b.breakdown.*part);
  }
  REQUIRE(a.devices.size() == b.devices.size());
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    CHECK(a.devices[i].id == b.devices[i].id);
    CHECK(a.devices[i].busy_s == b.devices[i].busy_s);
    CHECK(a.devices[i].achieved_tflops == b.devices[i].achieved_tflops);
    CHECK(a.devices[i].peak_memory_bytes == b.devices[i].peak_memory_bytes);
  }
}

/// Merged against every unit; returns the merged run's counters.
sim::SimulationStats compare(const plan::Plan& p) {
  sim::SimulationStats merged_stats, full_stats;
  const plan::Estimate merged = run(p, true, &merged_stats);
  const plan::Estimate full = run(p, false, &full_stats);
  check_identical(merged, full);
  CHECK(full_stats.simulated_units == full_stats.replica_units);
  CHECK(merged_stats.replica_units == full_stats.replica_units);
  return merged_stats;
}

}  // namespace

TEST_CASE("the merged engine gives every shipped plan's estimate bit for bit") {
  for (const char* name : {"a100-64-gpt3-13b-wave.yaml", "a100-64-gpt3-6.7b-interleaved.yaml",
                           "a100-v100-gpt3-1.3b-mixed-tp.yaml", "a100-v100-gpt3-1.3b.yaml",
                           "mixed-node-gpt2-124m.yaml", "v100-t4-gpt2-350m.yaml"}) {
    const plan::Plan base = shipped(name);
    // Few micro-batches (warm-up and drain only), the plan's own, and a long steady state.
    for (int micro_batches : {4, base.micro_batches, 512}) {
      CAPTURE(name);
      CAPTURE(micro_batches);
      plan::Plan p = base;
      p.micro_batches = micro_batches;
      compare(p);
    }
  }
}

TEST_CASE("the merged engine matches every unit's run under each single-chunk schedule") {
  for (const char* name : {"a100-v100-gpt3-1.3b.yaml", "v100-t4-gpt2-350m.yaml", "mixed-node-gpt2-124m.yaml"}) {
    for (plan::ScheduleKind kind : {plan::ScheduleKind::gpipe, plan::ScheduleKind::one_f_one_b,
                                    plan::ScheduleKind::zb_h1}) {
      CAPTURE(name);
      CAPTURE(plan::to_string(kind));
      plan::Plan p = shipped(name);
      p.schedule.kind = kind;
      p.micro_batches = 64;
      compare(p);
    }
  }
}

TEST_CASE("alike replicas run once: one unit per group of alike replicas, more across a fan-out bridge") {
  // a100-v100-gpt3-1.3b: four groups of 16 replicas (tp 1), each group on one device model
  // with equal shares, bridged replica to replica: one class per group.
  CHECK(compare(shipped("a100-v100-gpt3-1.3b.yaml")).simulated_units == 4);
  // v100-t4-gpt2-350m: 8 V100 replicas (tp 2) feed 16 T4 replicas, each sender two receivers
  // one after the other. The T4 replicas fed second receive later than those fed first: two
  // classes there; each V100 replica gets its gradients back from one of each: one class.
  const sim::SimulationStats fan_out = compare(shipped("v100-t4-gpt2-350m.yaml"));
  CHECK(fan_out.replica_units == 24);
  CHECK(fan_out.simulated_units == 3);
  // mixed-node-gpt2-124m: one group whose replicas take 2 or 4 samples: one class per share.
  CHECK(compare(shipped("mixed-node-gpt2-124m.yaml")).simulated_units == 2);
}

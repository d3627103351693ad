// File: alike_units.h
// Which replica units the engine may run once: classes of a group's replicas alike in every
// figure the engine reads for them and in the classes of their transfers' partners, and the
// routing of each transfer of a class's representative to the representatives it stands for.
// Private to libsim.
#pragma once

#include <vector>

#include "cost_table.h"
#include "whale/plan/schedule_program.h"

namespace whale::sim {

/// A partition of the engine's replica units (unit = group_first_unit[group] + replica) into
/// classes, with where the transfers of each class's representative land.
///
/// Contract (alike_units): two units of one class run the same group program, hold
/// bit-identical ReplicaCost and optimizer_s on every stage of their group, send their
/// transfers (per stage boundary and direction, in to_next order) with bit-identical times to
/// units of the same classes in the same order, and receive every transfer of a key from the
/// same set of (sender's class, position among the sender's transfers). Then, by induction
/// over the engine's instructions, every figure of two such units is bit-identical, whatever
/// the order the engine runs them in, except where two transfers into one key land at the same
/// time with different starts (which start the engine keeps depends on that order: the engine
/// checks for it and then runs every unit).
struct UnitClasses {
  std::vector<int> group_first_unit;  // unit id of replica 0 of each group
  std::vector<int> representative;    // by unit: the lowest unit of its class (itself if it runs)
  /// By boundary s (stage s to s + 1) and index into to_next: the replicas of stage s + 1 whose
  /// activation key takes this transfer's landing (empty when the sender does not run).
  std::vector<std::vector<std::vector<int>>> activation_receivers;
  /// The same for the gradient sent back along it: replicas of stage s.
  std::vector<std::vector<std::vector<int>>> gradient_receivers;
  int classes = 0;

  bool runs(int unit) const { return representative[unit] == unit; }
};

/// Every unit in a class of its own: each transfer lands where it is addressed (the engine
/// exactly as it runs without classes).
UnitClasses each_unit_alone(const plan::ScheduleProgram& program, const CostTable& table);

/// The coarsest partition that meets the contract above, found by refinement: units start in
/// classes by group and costs, and split by their partners' classes until no class splits.
/// O(rounds x (units + transfers)); rounds are at most the stage count plus one in practice
/// (a split travels one stage boundary per round).
UnitClasses alike_units(const plan::ScheduleProgram& program, const CostTable& table);

}  // namespace whale::sim

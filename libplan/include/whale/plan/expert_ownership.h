// File: expert_ownership.h
// Which member of an expert-parallel group holds which routed experts, evenly (experts / ep
// each) or by the plan's per-rank counts (Stage::expert_counts): the one rule that the
// simulator, the planner and whale-run share (Stage::expert_ownership).
#pragma once

#include <vector>

namespace whale::plan {

/// Member q of `members` holds the routed experts [first(q), first(q) + count(q)), ascending
/// and contiguous, so the experts' global order is the members' order.
class ExpertOwnership {
 public:
  /// One member holding every expert of `experts`.
  explicit ExpertOwnership(int experts = 0);
  /// `counts` (one per member, each >= 1, summing to `experts`; empty: experts / members each,
  /// members dividing experts). Throws std::invalid_argument otherwise (validate_plan and the
  /// stage's checks report the user's error first).
  ExpertOwnership(int experts, int members, const std::vector<int>& counts);

  int members() const { return static_cast<int>(counts_.size()); }
  int count(int member) const { return counts_.at(member); }
  /// 0 <= member <= members(); first(members()) is the number of experts.
  int first(int member) const { return first_.at(member); }
  /// The member holding `expert` (0 <= expert < experts).
  int owner(int expert) const;
  /// count(q) for every member q, in member order.
  const std::vector<int>& counts() const { return counts_; }

 private:
  std::vector<int> counts_;
  std::vector<int> first_;  // members() + 1 entries: first_[q] = sum of counts before q
};

}  // namespace whale::plan

// File: expert_ownership.cpp
// ExpertOwnership: the prefix sums of the members' expert counts.
#include "whale/plan/expert_ownership.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace whale::plan {

ExpertOwnership::ExpertOwnership(int experts) : ExpertOwnership(experts, 1, {}) {}

ExpertOwnership::ExpertOwnership(int experts, int members, const std::vector<int>& counts) {
  if (members < 1) throw std::invalid_argument("ExpertOwnership: " + std::to_string(members) + " members");
  if (counts.empty()) {
    if (experts % members != 0)
      throw std::invalid_argument("ExpertOwnership: " + std::to_string(members) + " members do not split " +
                                  std::to_string(experts) + " experts evenly");
    counts_.assign(members, experts / members);
  } else {
    counts_ = counts;
  }
  first_.assign(1, 0);
  for (int c : counts_) {
    if (c < 1 && experts > 0) throw std::invalid_argument("ExpertOwnership: a member holds " + std::to_string(c) + " experts");
    first_.push_back(first_.back() + c);
  }
  if (static_cast<int>(counts_.size()) != members || first_.back() != experts)
    throw std::invalid_argument("ExpertOwnership: counts of " + std::to_string(counts_.size()) + " members sum to " +
                                std::to_string(first_.back()) + ", not " + std::to_string(experts) + " experts");
}

int ExpertOwnership::owner(int expert) const {
  // The last member whose first expert is at or before `expert`.
  return static_cast<int>(std::upper_bound(first_.begin(), first_.end() - 1, expert) - first_.begin()) - 1;
}

}  // namespace whale::plan

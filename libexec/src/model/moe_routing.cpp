// File: moe_routing.cpp
// make_moe_routing: capacity, dropping and the grouped order of the routed rows.
#include "model/moe_routing.h"

#include <cmath>

#include "whale/plan/check.h"

namespace whale::exec {

MoeRoutingPlan make_moe_routing(const std::vector<int32_t>& chosen, int rows, int top_k,
                                int experts, double capacity_factor) {
  WHALE_CHECK(chosen.size() == static_cast<std::size_t>(rows) * top_k,
              "make_moe_routing: " + std::to_string(chosen.size()) + " choices for " +
                  std::to_string(rows) + " rows of top " + std::to_string(top_k));
  MoeRoutingPlan plan;
  plan.rows = rows;
  plan.top_k = top_k;
  plan.experts = experts;
  const int choices = rows * top_k;
  plan.capacity = capacity_factor > 0
                      ? static_cast<int>(std::ceil(capacity_factor * choices / experts))
                      : choices;
  // Per expert, its choices in token then slot order; those past the capacity are dropped.
  std::vector<std::vector<int>> taken(experts);
  plan.load_fraction.assign(experts, 0.0);
  plan.expert_choices.assign(experts, 0);
  for (int slot = 0; slot < choices; ++slot) {
    const int e = chosen[slot];
    WHALE_CHECK(e >= 0 && e < experts, "make_moe_routing: expert " + std::to_string(e) +
                                           " outside 0.." + std::to_string(experts - 1));
    plan.load_fraction[e] += 1.0 / choices;
    ++plan.expert_choices[e];
    if (static_cast<int>(taken[e].size()) < plan.capacity) taken[e].push_back(slot);
  }
  plan.slot_rows.assign(choices, -1);
  plan.expert_rows.assign(experts, 0);
  for (int e = 0; e < experts; ++e) {
    plan.expert_rows[e] = static_cast<int>(taken[e].size());
    for (int slot : taken[e]) {
      plan.slot_rows[slot] = static_cast<int32_t>(plan.source_rows.size());
      plan.source_rows.push_back(slot / top_k);
    }
  }
  return plan;
}

}  // namespace whale::exec

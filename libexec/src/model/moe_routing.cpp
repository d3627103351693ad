// File: moe_routing.cpp
// make_moe_routing: capacity, dropping and the grouped order of the routed rows;
// keep_token_rows: one slice of them.
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
  plan.expert_choices.assign(experts, 0);
  for (int slot = 0; slot < choices; ++slot) {
    const int e = chosen[slot];
    WHALE_CHECK(e >= 0 && e < experts, "make_moe_routing: expert " + std::to_string(e) +
                                           " outside 0.." + std::to_string(experts - 1));
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

MoeRoutingPlan keep_token_rows(const MoeRoutingPlan& plan, int first_row, int end_row) {
  WHALE_CHECK(0 <= first_row && first_row <= end_row && end_row <= plan.rows,
              "keep_token_rows: rows [" + std::to_string(first_row) + ", " +
                  std::to_string(end_row) + ") of " + std::to_string(plan.rows));
  MoeRoutingPlan kept = plan;
  kept.source_rows.clear();
  kept.expert_rows.assign(plan.experts, 0);
  std::vector<int32_t> renumbered(plan.source_rows.size(), -1);
  int m = 0;
  for (int e = 0; e < plan.experts; ++e)
    for (int i = 0; i < plan.expert_rows[e]; ++i, ++m) {
      const int32_t token = plan.source_rows[m];
      if (token < first_row || token >= end_row) continue;
      renumbered[m] = static_cast<int32_t>(kept.source_rows.size());
      kept.source_rows.push_back(token);
      ++kept.expert_rows[e];
    }
  for (int32_t& row : kept.slot_rows)
    if (row >= 0) row = renumbered[row];
  return kept;
}

}  // namespace whale::exec

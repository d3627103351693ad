// File: moe_routing.h
// Private: the routing plan of one MoE block and one micro-batch on one replica, made on the
// host from the router's choices: which token copies each expert takes (capacity dropping in
// token order), where each copy sits in the routed buffer (grouped by expert, so by expert-
// parallel member), and the load fractions of the auxiliary loss; and the part of a plan that
// one slice of its tokens sends (the folded layout, moe_layer.h).
#pragma once

#include <cstdint>
#include <vector>

namespace whale::exec {

struct MoeRoutingPlan {
  int rows = 0, top_k = 0, experts = 0;
  /// Tokens each expert takes: ceil(capacity_factor * rows * top_k / experts), or rows * top_k
  /// when dropless (capacity_factor 0).
  int capacity = 0;
  std::vector<int32_t> slot_rows;    // (rows, top_k): the routed row of each choice, -1 dropped
  std::vector<int32_t> source_rows;  // (routed): the token of each routed row
  std::vector<int> expert_rows;      // (experts): routed rows of each expert, in expert order
  /// (experts): the choices of each expert among all rows * top_k, dropped ones included
  /// (sigmoid_bias's load).
  std::vector<int> expert_choices;
  int routed_rows() const { return static_cast<int>(source_rows.size()); }
  /// The fraction of all rows * top_k choices that chose `expert`, dropped ones included (the
  /// Switch Transformer's f_e).
  double load_fraction(int expert) const {
    return static_cast<double>(expert_choices.at(expert)) / (static_cast<double>(rows) * top_k);
  }
};

/// The plan of `chosen` (rows, top_k; experts in [0, experts)): expert e's routed rows are the
/// first `capacity` choices of e in token order (then slot order), placed after the rows of
/// experts 0..e-1 in that order.
MoeRoutingPlan make_moe_routing(const std::vector<int32_t>& chosen, int rows, int top_k,
                                int experts, double capacity_factor);

/// The routed rows of `plan` whose tokens lie in [first_row, end_row), in the plan's order
/// (so still grouped by expert, each expert's in token order): slot_rows of the other tokens
/// -1, source_rows and expert_rows of the kept rows alone. rows, top_k, experts, capacity and
/// expert_choices stay the whole plan's (capacity and the loads count every token).
MoeRoutingPlan keep_token_rows(const MoeRoutingPlan& plan, int first_row, int end_row);

}  // namespace whale::exec

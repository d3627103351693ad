// File: moe_routing.h
// Private: the routing plan of one MoE block and one micro-batch on one replica, made on the
// host from the router's choices: which token copies each expert takes (capacity dropping in
// token order), where each copy sits in the routed buffer (grouped by expert, so by expert-
// parallel member), and the load fractions of the auxiliary loss.
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
  /// (experts): the fraction of all rows * top_k choices that chose each expert, dropped ones
  /// included (the Switch Transformer's f_e).
  std::vector<double> load_fraction;
  /// (experts): the choices of each expert, dropped ones included (sigmoid_bias's load).
  std::vector<int> expert_choices;
  int routed_rows() const { return static_cast<int>(source_rows.size()); }
};

/// The plan of `chosen` (rows, top_k; experts in [0, experts)): expert e's routed rows are the
/// first `capacity` choices of e in token order (then slot order), placed after the rows of
/// experts 0..e-1 in that order.
MoeRoutingPlan make_moe_routing(const std::vector<int32_t>& chosen, int rows, int top_k,
                                int experts, double capacity_factor);

}  // namespace whale::exec

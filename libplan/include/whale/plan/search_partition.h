// File: search_partition.h
// Layer partition across heterogeneous stages (min-max compute under memory limits) and integer
// per-replica shares in proportion to device speed (rounded for the least slowest replica).
#pragma once

#include <functional>
#include <vector>

namespace whale::plan {

/// Cost of stage s holding layers [first, end): must not decrease when the range grows.
using RangeCost = std::function<double(int stage, int first, int end)>;
/// Whether stage s can hold layers [first, end) in memory: must stay false once false when the
/// range grows.
using RangeFits = std::function<bool(int stage, int first, int end)>;

/// Splits layers [0, layers) into `stages` contiguous non-empty ranges minimising the largest
/// stage cost, every range fitting its stage. Returns the boundaries b[0] = 0 < b[1] < ... <
/// b[stages] = layers, or an empty vector when no split fits. Exact (to a relative 1e-6 of the
/// bottleneck): a parametric search over the bottleneck with a fast greedy feasibility test
/// (each stage takes the longest prefix within the bound), confirmed by an exact reachability
/// test over positions in O(stages * layers) cost calls where some stage cannot hold some
/// single layer within the bound (otherwise the greedy test is exact). Each test moves an end
/// of the bracket onto a cost value (a split found: its largest stage cost; none: the least
/// cost it saw above the bound), so the search lands on the optimum's value in a few tests.
/// `upper` (> 0) bounds the cost of every range that fits (costs may be infinite for ranges
/// that do not); 0 takes the largest cost(s, 0, layers).
std::vector<int> partition_layers(int layers, int stages, const RangeCost& cost,
                                  const RangeFits& fits, double upper = 0);

/// Splits layers [0, layers) into group_of.size() stages, stage s running on device group
/// group_of[s] (a group runs several stages under interleaved 1F1B and wave), minimising the
/// largest per-group sum of stage costs: a group's step time is the sum over its chunks.
/// Heuristic: a bisection over that bound T in (lower, upper] with a greedy test in which the
/// c-th of a group's v stages keeps the group's running sum within T (c + 1) / v (taking one
/// layer where a single layer exceeds that but not T), which also evens out the chunks of a
/// group (a smaller bubble). Returns an empty vector when the test finds no split within
/// `upper`. With U the largest group sum of the per-stage min-max split, (U / v, U] brackets
/// the optimum (v: the most stages of one group).
std::vector<int> partition_layers_grouped(int layers, const std::vector<int>& group_of,
                                          const RangeCost& cost, const RangeFits& fits,
                                          double lower, double upper);

/// The same problem solved by dynamic programming in O(stages * layers^2); the reference the
/// tests hold partition_layers to. Returns the optimal bottleneck (infinity when none fits).
double partition_bottleneck_dp(int layers, int stages, const RangeCost& cost,
                               const RangeFits& fits);

/// Integer shares of `total` samples over replicas in proportion to `speeds` (> 0), summing to
/// `total`, each at least 1 (requires total >= speeds.size()), rounded to minimise the largest
/// share / speed (the slowest replica, Whale's intra-TaskGraph balancing); among such roundings
/// the surplus over the quotas is taken from the shares furthest above them (ties: later index).
/// Where a speed is not positive and finite (a replica whose forward takes no time): even_shares.
std::vector<int> proportional_shares(int total, const std::vector<double>& speeds);

/// Even shares: total / n each, the first total % n replicas one more.
std::vector<int> even_shares(int total, int n);

}  // namespace whale::plan

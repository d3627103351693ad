// File: deepep_exchange.h
// The token exchange of DeepEP's normal kernels (Megatron-Core's flex dispatcher with the DeepEP
// backend): tokens deduplicated per destination node and rank, where NCCL's all-to-all moves one
// copy per (token, expert). docs/moe.md, "Dispatchers".
#pragma once

#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// The probability that a token's top_k distinct experts, drawn uniformly from `experts` (perfect
/// balance), include at least one of `held` given experts: 1 - C(experts - held, top_k) /
/// C(experts, top_k). 0 when held <= 0; 1 when fewer than top_k experts are not held.
double expert_reach_probability(int experts, int top_k, int held);

/// One DeepEP dispatch among `devices` (an ep group in ep-rank order; a combine moves the same
/// bytes back), member i holding expert_counts[i] experts, each member's tokens weighing
/// `token_copy_bytes` in one copy. A device sends each token once to every other node holding
/// one of its experts, over its network share (the RDMA leg, to the peer of the same local
/// rank), and once to every other member of its node holding one, over the intra link; it also
/// forwards over the intra link what its peers on the other nodes sent it, each token to the
/// members of its node that hold one of its experts (nodes of equal size: its intra bytes are
/// nodes x its own node's). Both legs run at once, each message paying its link's latency; the
/// slowest device bounds it. 0 when n <= 1 or token_copy_bytes <= 0.
Seconds deepep_exchange_s(const plan::Cluster& cluster, const std::vector<int>& devices,
                          const std::vector<int>& expert_counts, int top_k, Bytes token_copy_bytes);

}  // namespace whale::sim

// File: bridge.cpp
// Bridges between adjacent stages: the overlaps of the sender's and the receiver's sample
// ranges, and which device of the sending replica feeds each tp rank of a receiver.
#include "whale/plan/bridge.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "whale/plan/error.h"

namespace whale::plan {
namespace {

int total_samples(const Stage& stage) {
  return std::accumulate(stage.shares.begin(), stage.shares.end(), 0);
}

}  // namespace

std::vector<BridgeTransfer> bridge_transfers(const Stage& from, const Stage& to) {
  if (total_samples(from) != total_samples(to)) {
    throw Error("", "stages", "adjacent stages whose shares sum to the same micro-batch size (" +
                                  std::to_string(total_samples(from)) + " vs " +
                                  std::to_string(total_samples(to)) + ")");
  }
  // Walk both replica lists along the sample axis; each overlap of a sender's range
  // [a, a + share) with a receiver's range is one transfer.
  std::vector<BridgeTransfer> transfers;
  size_t r_from = 0, r_to = 0;
  int end_from = from.shares.empty() ? 0 : from.shares[0];
  int end_to = to.shares.empty() ? 0 : to.shares[0];
  int cursor = 0;
  while (r_from < from.shares.size() && r_to < to.shares.size()) {
    const int end = std::min(end_from, end_to);
    if (end > cursor) {
      transfers.push_back(BridgeTransfer{static_cast<int>(r_from), static_cast<int>(r_to),
                                         cursor, end - cursor});
      cursor = end;
    }
    if (end_from == end && ++r_from < from.shares.size()) end_from += from.shares[r_from];
    if (end_to == end && ++r_to < to.shares.size()) end_to += to.shares[r_to];
  }
  return transfers;
}

int bridge_source_device(const Stage& from, int from_replica, int to_tp_rank) {
  const int dp = from.tp < 1 ? 0 : from.dp();
  if (from_replica < 0 || from_replica >= dp || to_tp_rank < 0) {
    throw Error("", "stages", "a replica 0.." + std::to_string(dp - 1) +
                                  " and a tp rank >= 0 (got replica " +
                                  std::to_string(from_replica) + ", tp rank " +
                                  std::to_string(to_tp_rank) + ")");
  }
  return from.devices[static_cast<size_t>(from.replica_offset(from_replica)) + to_tp_rank % from.replica_tp(from_replica)];
}

}  // namespace whale::plan

// File: bridge.h
// Bridges: how a micro-batch's samples move between adjacent stages whose dp degrees or
// shares differ (Whale's bridge layers). Used by the simulator and the runtime alike.
#pragma once

#include <vector>

#include "whale/plan/plan.h"

namespace whale::plan {

/// A contiguous run of samples of one micro-batch that replica `from_replica` of the sending
/// stage passes to replica `to_replica` of the receiving stage. Samples are numbered within the
/// micro-batch; replica r of a stage owns [first_sample(r), first_sample(r) + shares[r]).
struct BridgeTransfer {
  int from_replica = 0;
  int to_replica = 0;
  int first_sample = 0;
  int samples = 0;
};

/// The transfers from stage `from` to stage `to` (both hold the whole micro-batch), ordered by
/// first_sample. Gradients flow back along the same transfers reversed.
std::vector<BridgeTransfer> bridge_transfers(const Stage& from, const Stage& to);

/// Every tp rank of a receiving replica gets the full activations. The tp rank `to_tp_rank` of
/// the receiver reads from the sender's device of tp rank (to_tp_rank % from.replica_tp(from_replica)) in
/// `from_replica`. Returns that device id.
int bridge_source_device(const Stage& from, int from_replica, int to_tp_rank);

}  // namespace whale::plan

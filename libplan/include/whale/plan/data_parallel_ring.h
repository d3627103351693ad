// File: data_parallel_ring.h
// DataParallelRing: how a device group's gradient all-reduce runs, as the simulator prices it
// (whale::sim::allreduce_s over the group's data-parallel ranks of one tp rank): a ring among
// the replicas on each node over its intra link, then, where the replicas span several nodes,
// a ring across the nodes of 1/local of the bytes over each device's share of its node's
// network (every device of a node runs its own rings at once, so each gets that share), and
// the same back for the all-gather.
#pragma once

#include <vector>

#include "whale/plan/cluster.h"

namespace whale::plan {

struct DataParallelRing {
  int local = 1;   // the most replicas on one node
  int nodes = 1;   // the nodes the replicas span
  Link intra;      // the slowest intra link among those nodes
  Link network;    // the slowest per-device share of their networks (unused on one node)
  /// Seconds of an all-reduce of `bytes` on each replica (0 for none, or one replica).
  Seconds allreduce_s(Bytes bytes) const;
  /// The part of allreduce_s that does not depend on the bytes (its latencies), for bytes > 0.
  Seconds latency_s() const;
};

/// The ring of the replicas of a group of `devices` at tensor-parallel degree `tp` (replica r
/// on devices [r tp, (r + 1) tp)), each represented by its first device.
DataParallelRing data_parallel_ring(const Cluster& cluster, const std::vector<int>& devices, int tp);

}  // namespace whale::plan

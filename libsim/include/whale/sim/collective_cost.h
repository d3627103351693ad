// File: collective_cost.h
// Communication costs over the cluster's links (alpha-beta): ring collectives, hierarchical
// all-reduce across nodes bounded by the slowest link, and point-to-point transfers. Every link
// is read as the profiles' per-link-kind calibration makes it (link_calibration.h).
#pragma once

#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/units.h"

namespace whale::sim {

/// Ring all-reduce of `bytes` over n ranks on one link kind:
/// 2(n-1)/n * bytes / bandwidth + 2(n-1) * latency. 0 when n <= 1 or bytes <= 0.
Seconds ring_allreduce_s(Bytes bytes, int ranks, const plan::Link& link);
/// Ring reduce-scatter (or all-gather) of `bytes`, shared with the planner (cluster.h).
using plan::ring_reduce_scatter_s;

/// The network share of one device on `node`: the node's calibrated network bandwidth divided evenly among
/// the node's devices (every group of a stage communicates at once), the network's latency.
plan::Link device_network_share(const plan::Cluster& cluster, int node);

/// All-reduce of `bytes` among `devices` (each holds all `bytes`).
/// - All on one node: a ring over that node's intra link.
/// - Across nodes: hierarchical. With k = the most group devices on one node and N nodes:
///   intra-node reduce-scatter (k ranks), an inter-node ring all-reduce of bytes/k run by each
///   local rank over its network share (N ranks), an intra-node all-gather. Each phase uses the
///   slowest link of its kind among the nodes involved (lowest bandwidth, highest latency).
Seconds allreduce_s(const plan::Cluster& cluster, const std::vector<int>& devices, Bytes bytes);

/// Reduce-scatter of `bytes` (each device ends with bytes / n of the sum) among `devices`, the
/// first half of allreduce_s: on one node a ring over the intra link; across nodes an
/// intra-node reduce-scatter (k ranks) then an inter-node ring reduce-scatter of bytes/k over
/// the network share (N ranks). allreduce_s == reduce_scatter_s + all_gather_s exactly.
Seconds reduce_scatter_s(const plan::Cluster& cluster, const std::vector<int>& devices,
                         Bytes bytes);
/// All-to-all among `devices`, each sending `bytes` in total, bytes / n to every member (itself
/// included, which costs nothing): per device, the members on its node over the intra link
/// and the others over its network share at once, each message paying its link's latency;
/// the slowest device bounds it. 0 when n <= 1 or bytes <= 0.
Seconds all_to_all_s(const plan::Cluster& cluster, const std::vector<int>& devices, Bytes bytes);
/// All-gather to `bytes` in total on every device: the same cost as reduce_scatter_s.
Seconds all_gather_s(const plan::Cluster& cluster, const std::vector<int>& devices, Bytes bytes);

/// A point-to-point transfer of `bytes` from device a to device b on
/// calibrated_link_between(a, b); 0 when a == b or bytes <= 0.
Seconds p2p_s(const plan::Cluster& cluster, int from_device, int to_device, Bytes bytes);

/// A point-to-point transfer of `bytes` from device a to device b made while the other devices
/// of their nodes make theirs (the devices of a pipeline stage each send their own part of a
/// micro-batch at once): across nodes on the slower of the two devices' network shares
/// (device_network_share; on a node with one NIC per GPU, the GPU's own NIC), inside a node on
/// the calibrated intra link (each device has its own, as p2p_s). 0 when a == b or bytes <= 0.
Seconds concurrent_p2p_s(const plan::Cluster& cluster, int from_device, int to_device, Bytes bytes);

}  // namespace whale::sim

// File: link_calibration.h
// How the collective and point-to-point costs honour the fitted per-link-kind figures of the
// device profiles (plan::LinkCalibration, calibration.links.<kind>): a node's links take the
// calibration of the profiles of the node's devices for the link's kind. Links of a kind that no
// profile calibrates, and every link under default calibrations, are returned unchanged.
#pragma once

#include "whale/plan/cluster.h"

namespace whale::sim {

/// `link`, a link of node `node` (its intra_link or its network), as calibrated for its kind:
/// bandwidth x bandwidth_scale, latency + latency_s. When the node's devices have several
/// profiles, the slowest figures among them apply (smallest scale, largest latency).
plan::Link calibrated_link(const plan::Cluster& cluster, int node, plan::Link link);

/// Node `node`'s intra link, calibrated.
plan::Link calibrated_intra_link(const plan::Cluster& cluster, int node);

/// Cluster::link_between(a, b) with each node's links calibrated first: the calibrated intra
/// link of a shared node, otherwise the slower of the two calibrated networks.
plan::Link calibrated_link_between(const plan::Cluster& cluster, int a, int b);

}  // namespace whale::sim

// File: node_members.h
// Which nodes a set of devices spans, and how many of the devices each node holds: the shape
// a hierarchical collective and a tensor-parallel width are sized by.
#pragma once

#include <utility>
#include <vector>

#include "whale/plan/cluster.h"

namespace whale::plan {

/// The nodes of `devices` (global ids of `cluster`), ascending, each with how many of the
/// devices it holds; a device listed twice counts twice. Empty for no devices.
std::vector<std::pair<int, int>> members_per_node(const Cluster& cluster, const std::vector<int>& devices);

/// The most of `devices` that any one node holds (0 for no devices).
int most_in_one_node(const Cluster& cluster, const std::vector<int>& devices);

}  // namespace whale::plan

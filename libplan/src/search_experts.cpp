// File: search_experts.cpp
// Expert layouts of an MoE stage and the planner's choice among them (search_experts.h).
#include "whale/plan/search_experts.h"

#include <algorithm>

namespace whale::plan {

std::vector<ExpertLayout> expert_layouts(const MoeSpec& moe, int device_count, int tp) {
  std::vector<ExpertLayout> out;
  for (int expert_tp = 1; expert_tp <= tp; expert_tp *= 2) {
    for (int ep = 1; ep <= moe.experts; ++ep) {
      if (moe.experts % ep != 0 || device_count % (ep * expert_tp) != 0) continue;
      out.push_back({ep, expert_tp});
    }
  }
  std::sort(out.begin(), out.end(), [](const ExpertLayout& a, const ExpertLayout& b) {
    const int sa = a.ep * a.expert_tp, sb = b.ep * b.expert_tp;
    return sa != sb ? sa < sb : a.ep < b.ep;
  });
  return out;
}

namespace {

/// Whether every ep group of the layout (expert-tp-major order, plan.h) lies inside one node.
bool groups_inside_nodes(const Cluster& cluster, const std::vector<int>& devices, const ExpertLayout& layout) {
  const int size = static_cast<int>(devices.size());
  for (int first = 0; first < size; first += layout.ep * layout.expert_tp) {
    for (int t = 0; t < layout.expert_tp; ++t) {
      const int node = cluster.devices.at(devices[first + t]).node;
      for (int e = 1; e < layout.ep; ++e) {
        if (cluster.devices.at(devices[first + e * layout.expert_tp + t]).node != node) return false;
      }
    }
  }
  return true;
}

/// The most sharding first; at equal sharding, more ep (fewer expert-tp collectives).
bool better(const ExpertLayout& a, const ExpertLayout& b) {
  const int sa = a.ep * a.expert_tp, sb = b.ep * b.expert_tp;
  return sa != sb ? sa > sb : a.ep > b.ep;
}

}  // namespace

ExpertLayout choose_expert_layout(const Model& model, const Cluster& cluster, const std::vector<int>& devices, int tp) {
  ExpertLayout best{1, tp};
  if (!model.moe) return best;
  bool found = false;
  for (const ExpertLayout& layout : expert_layouts(*model.moe, static_cast<int>(devices.size()), tp)) {
    if (!groups_inside_nodes(cluster, devices, layout)) continue;
    if (!found || better(layout, best)) best = layout;
    found = true;
  }
  return found ? best : ExpertLayout{1, tp};
}

int expert_shards(const Model& model, int tp, int dp, int node_devices) {
  if (!model.moe) return tp;
  // expert_layouts' pairs, walked without building them: the planner's estimate asks this in
  // its inner loop.
  const int experts = model.moe->experts, devices = tp * dp;
  int best = tp;
  for (int expert_tp = 1; expert_tp <= tp; expert_tp *= 2) {
    for (int ep = 1; ep <= experts; ++ep) {
      const int span = ep * expert_tp;
      if (experts % ep != 0 || devices % span != 0) continue;
      // Consecutive groups of ep x expert_tp devices stay in a node when they divide its size.
      if (ep > 1 && (span > node_devices || node_devices % span != 0)) continue;
      best = std::max(best, span);
    }
  }
  return best;
}

}  // namespace whale::plan

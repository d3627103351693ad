// File: search_experts.cpp
// Expert layouts of an MoE stage and the planner's choice among them (search_experts.h).
#include "whale/plan/search_experts.h"

#include <algorithm>

namespace whale::plan {

namespace {

/// The layouts with expert_tp a power of two up to `most_expert_tp` that `expert_tp_allowed`
/// takes, ep dividing the experts and ep x expert_tp dividing device_count; ordered by
/// ep x expert_tp, then ep, ascending.
template <typename Allowed>
std::vector<ExpertLayout> layouts_up_to(const MoeSpec& moe, int device_count, int most_expert_tp,
                                        Allowed expert_tp_allowed) {
  std::vector<ExpertLayout> out;
  for (int expert_tp = 1; expert_tp <= most_expert_tp; expert_tp *= 2) {
    if (!expert_tp_allowed(expert_tp)) continue;
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

/// Whether whale-run trains experts split `expert_tp` ways beside attention at `tp`: expert_tp
/// divides tp or is a multiple of it, and divides the expert FFN width.
bool runnable_expert_tp(const MoeSpec& moe, int tp, int expert_tp) {
  return (tp % expert_tp == 0 || expert_tp % tp == 0) && moe.expert_ffn_hidden % expert_tp == 0;
}

}  // namespace

std::vector<ExpertLayout> expert_layouts(const MoeSpec& moe, int device_count, int tp) {
  return layouts_up_to(moe, device_count, tp, [](int) { return true; });
}

std::vector<ExpertLayout> runnable_expert_layouts(const MoeSpec& moe, int device_count, int tp) {
  return layouts_up_to(moe, device_count, device_count,
                       [&](int expert_tp) { return runnable_expert_tp(moe, tp, expert_tp); });
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

std::vector<Plan> expert_layout_variants(const Plan& plan, std::size_t most) {
  if (!plan.model.moe || plan.stages.empty()) return {};
  for (const Stage& stage : plan.stages) {
    if (stage.mixed_tp()) return {};
  }
  // The layouts valid on every stage, in the order of the first stage's list.
  std::vector<ExpertLayout> common;
  for (const ExpertLayout& layout : runnable_expert_layouts(
           *plan.model.moe, static_cast<int>(plan.stages.front().devices.size()), plan.stages.front().tp)) {
    // The first stage's list already holds ep to dividing the experts.
    const bool everywhere = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const Stage& stage) {
      return runnable_expert_tp(*plan.model.moe, stage.tp, layout.expert_tp) &&
             stage.devices.size() % static_cast<std::size_t>(layout.ep * layout.expert_tp) == 0;
    });
    const bool planned = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const Stage& stage) {
      return stage.ep == layout.ep && stage.expert_tp_degree() == layout.expert_tp && stage.expert_counts.empty();
    });
    if (everywhere && !planned) common.push_back(layout);
  }
  std::stable_sort(common.begin(), common.end(), better);
  if (common.size() > most) common.resize(most);
  std::vector<Plan> out;
  for (const ExpertLayout& layout : common) {
    Plan variant = plan;
    for (Stage& stage : variant.stages) {
      stage.ep = layout.ep;
      stage.expert_tp = layout.expert_tp;
      stage.expert_counts.clear();
    }
    out.push_back(std::move(variant));
  }
  return out;
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

// File: search_experts.cpp
// Expert layouts of an MoE stage and the planner's choice among them (search_experts.h).
#include "whale/plan/search_experts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

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

namespace {

/// The layouts of runnable_expert_layouts valid on every stage of `stages` (at least one), with
/// their expert-tp groups inside nodes, but the one they all hold with even counts: nearest to
/// the first stage's layout first (the sum of |log2| of the ep and expert_tp ratios), then in
/// choose_expert_layout's order of preference.
std::vector<ExpertLayout> other_layouts(const Plan& plan, const std::vector<int>& stages) {
  const MoeSpec& moe = *plan.model.moe;
  const Stage& first = plan.stages.at(stages.front());
  std::vector<ExpertLayout> out;
  for (const ExpertLayout& layout : runnable_expert_layouts(moe, static_cast<int>(first.devices.size()), first.tp)) {
    // The first stage's list already holds ep to dividing the experts.
    const bool everywhere = std::all_of(stages.begin(), stages.end(), [&](int s) {
      const Stage& stage = plan.stages[s];
      return runnable_expert_tp(moe, stage.tp, layout.expert_tp) &&
             stage.devices.size() % static_cast<std::size_t>(layout.ep * layout.expert_tp) == 0 &&
             plan.cluster.runs_inside_nodes(stage.devices, layout.expert_tp);  // expert-tp groups
    });
    const bool held = std::all_of(stages.begin(), stages.end(), [&](int s) {
      const Stage& stage = plan.stages[s];
      return stage.ep == layout.ep && stage.expert_tp_degree() == layout.expert_tp && stage.expert_counts.empty();
    });
    if (everywhere && !held) out.push_back(layout);
  }
  const auto distance = [&](const ExpertLayout& l) {
    return std::fabs(std::log2(static_cast<double>(l.ep) / first.ep)) +
           std::fabs(std::log2(static_cast<double>(l.expert_tp) / first.expert_tp_degree()));
  };
  std::stable_sort(out.begin(), out.end(), [&](const ExpertLayout& a, const ExpertLayout& b) {
    const double da = distance(a), db = distance(b);
    return da != db ? da < db : better(a, b);
  });
  return out;
}

/// `plan` with the stages of `stages` at `layout`, their experts split evenly.
Plan with_layout(const Plan& plan, const std::vector<int>& stages, const ExpertLayout& layout) {
  Plan variant = plan;
  for (int s : stages) {
    Stage& stage = variant.stages[s];
    stage.ep = layout.ep;
    stage.expert_tp = layout.expert_tp;
    stage.expert_counts.clear();
  }
  return variant;
}

/// Whether `plan` can take expert layout variants: a mixture-of-experts plan whose replicas
/// all run at their stage's tp.
bool takes_layout_variants(const Plan& plan) {
  return plan.model.moe && !plan.stages.empty() &&
         std::none_of(plan.stages.begin(), plan.stages.end(), [](const Stage& s) { return s.mixed_tp(); });
}

}  // namespace

std::vector<Plan> expert_layout_variants(const Plan& plan, std::size_t most) {
  if (!takes_layout_variants(plan)) return {};
  std::vector<int> all(plan.stages.size());
  for (std::size_t s = 0; s < all.size(); ++s) all[s] = static_cast<int>(s);
  std::vector<Plan> out;
  for (const ExpertLayout& layout : other_layouts(plan, all)) {
    if (out.size() == most) break;
    out.push_back(with_layout(plan, all, layout));
  }
  return out;
}

std::vector<Plan> kind_expert_layout_variants(const Plan& plan, std::size_t most) {
  if (!takes_layout_variants(plan)) return {};
  // The stages of each kind: the device model of their first device, tp and device count.
  std::map<std::tuple<std::string, int, std::size_t>, std::vector<int>> stages_of_kind;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const Stage& stage = plan.stages[s];
    stages_of_kind[{plan.cluster.devices.at(stage.devices.front()).model, stage.tp, stage.devices.size()}].push_back(s);
  }
  if (stages_of_kind.size() < 2) return {};
  std::vector<const std::vector<int>*> kinds;
  std::vector<std::vector<ExpertLayout>> layouts;
  for (const auto& [kind, stages] : stages_of_kind) {
    kinds.push_back(&stages);
    layouts.push_back(other_layouts(plan, stages));
  }
  // Round by round, each kind's next layout.
  std::vector<Plan> out;
  for (std::size_t round = 0; out.size() < most; ++round) {
    bool any = false;
    for (std::size_t k = 0; k < kinds.size() && out.size() < most; ++k) {
      if (round >= layouts[k].size()) continue;
      any = true;
      out.push_back(with_layout(plan, *kinds[k], layouts[k][round]));
    }
    if (!any) break;
  }
  return out;
}

namespace {

/// ExpertShardTable's answer with the stage's device count given modulo node_devices, all it
/// depends on:
/// ep 1 shards by expert_tp <= tp (never past the tp it starts from), and an ep > 1 group's
/// span divides node_devices, so it divides the count exactly when it divides the remainder.
int expert_shards_at(int experts, int tp, long remainder, int node_devices) {
  int best = tp;
  const int most_ep = std::min(experts, node_devices);
  for (int expert_tp = 1; expert_tp <= tp; expert_tp *= 2) {
    for (int ep = 2; ep <= most_ep; ++ep) {
      const int span = ep * expert_tp;
      // Consecutive groups of ep x expert_tp devices stay in a node when they divide its size.
      if (experts % ep != 0 || node_devices % span != 0 || remainder % span != 0) continue;
      best = std::max(best, span);
    }
  }
  return best;
}

}  // namespace

ExpertShardTable::ExpertShardTable(const Model& model, int node_devices)
    : experts_(model.moe ? model.moe->experts : 0), node_devices_(std::max(1, node_devices)) {
  if (experts_ == 0 || node_devices_ > kMostTableNode) return;   // larger nodes: computed per call
  by_level_.assign(kLevels, std::vector<int>(node_devices_, 0));
  for (int k = 0; k < kLevels; ++k) {
    for (int r = 0; r < node_devices_; ++r) by_level_[k][r] = expert_shards_at(experts_, 1 << k, r, node_devices_);
  }
}

int ExpertShardTable::operator()(int tp, int dp) const {
  if (experts_ == 0) return tp;
  const long remainder = static_cast<long>(tp) * dp % node_devices_;
  if (!by_level_.empty() && tp > 0 && (tp & (tp - 1)) == 0 && tp < (1 << kLevels)) {
    int k = 0;
    while ((1 << k) < tp) ++k;
    return by_level_[k][remainder];
  }
  return expert_shards_at(experts_, tp, remainder, node_devices_);
}

}  // namespace whale::plan

// File: search_space.cpp
// Enumerates the planner's structures (pipelines of device groups with per-model tp degrees)
// and the per-structure choices (micro-batching, schedule).
#include "whale/plan/search_space.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory_resource>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "whale/plan/error.h"
#include "whale/plan/hints.h"
#include "whale/plan/limits.h"
#include "whale/plan/node_members.h"

namespace whale::plan {
namespace {

// Orders group-pointer sequences of any vector type lexicographically, so that a set of
// arena-held keys can be searched with a reused scratch vector.
struct GroupsLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

// Device models of `devices` in order of first appearance, with their device lists.
std::vector<std::pair<std::string, std::vector<int>>> by_model(const Cluster& cluster,
                                                               const std::vector<int>& devices) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (int d : devices) {
    const std::string& m = cluster.devices[d].model;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == m; });
    if (it == out.end()) {
      out.push_back({m, {d}});
    } else {
      it->second.push_back(d);
    }
  }
  return out;
}

// Near-equal slicing (when p does not divide the device count) is tried up to this depth.
constexpr int kMaxNearEqualDepth = 16;
// Type-pure groups are laid in every order of the device models up to this depth (deeper, in
// memory order only). The order decides which model's groups hold the embedding and the head,
// which even out the layer count of a slow model's few groups, and which hold the most
// activations in flight: on mixed-1024 (gpt3-1.3b) interleaved A100 | A100 | V100 | H100
// reaches 92% of the upper bound, memory-ordered pipelines 88.5%. Every order at every depth
// would triple the structures of a deep model on a 1024-device cluster.
constexpr int kMaxReorderedDepth = 16;

// k for a power of two 2^k.
int exponent_of(int power_of_two) {
  int k = 0;
  while ((1 << k) < power_of_two) ++k;
  return k;
}

// The devices of `devices` (in order) that replicas of `tp` consecutive devices, each inside
// one node, can hold: of each run of devices on one node, the most whole replicas from its
// front. All of them where runs_inside_nodes(devices, tp) holds; fewer where a node holds a
// count of them that tp does not divide.
std::vector<int> whole_replicas(const Cluster& cluster, const std::vector<int>& devices, int tp) {
  std::vector<int> out;
  for (size_t first = 0; first < devices.size();) {
    const int node = cluster.devices[devices[first]].node;
    size_t end = first;
    while (end < devices.size() && cluster.devices[devices[end]].node == node) ++end;
    const size_t kept = (end - first) / tp * tp;
    out.insert(out.end(), devices.begin() + first, devices.begin() + first + kept);
    first = end;
  }
  return out;
}

std::vector<int> slice(const std::vector<int>& v, int first, int count) {
  return std::vector<int>(v.begin() + first, v.begin() + first + count);
}

// Candidate groupings (device lists only) of depth p.
std::vector<std::vector<std::vector<int>>> groupings(
    const std::vector<int>& ordered, const std::vector<std::pair<std::string, std::vector<int>>>& models,
    int p) {
  std::vector<std::vector<std::vector<int>>> out;
  const int n = static_cast<int>(ordered.size());
  if (n % p == 0) {  // equal contiguous slices
    std::vector<std::vector<int>> g;
    for (int i = 0; i < p; ++i) g.push_back(slice(ordered, i * (n / p), n / p));
    out.push_back(g);
  } else if (p <= kMaxNearEqualDepth) {  // near-equal slices, the first n % p one device larger
    std::vector<std::vector<int>> g;
    for (int i = 0, first = 0; i < p; ++i) {
      const int size = n / p + (i < n % p ? 1 : 0);
      g.push_back(slice(ordered, first, size));
      first += size;
    }
    out.push_back(g);
  }
  if (models.size() < 2) return out;
  bool striped_ok = true;
  for (const auto& m : models) striped_ok = striped_ok && static_cast<int>(m.second.size()) % p == 0;
  if (striped_ok) {  // each group takes an equal slice of every model
    std::vector<std::vector<int>> g(p);
    for (const auto& m : models) {
      const int per = static_cast<int>(m.second.size()) / p;
      for (int i = 0; i < p; ++i) {
        auto part = slice(m.second, i * per, per);
        g[i].insert(g[i].end(), part.begin(), part.end());
      }
    }
    out.push_back(g);
  }
  // Type-pure: model t gets p_t >= 1 groups of equal size; enumerate compositions of p, in
  // memory order and, up to kMaxReorderedDepth, in every other order of the models along the
  // pipeline.
  std::vector<size_t> order(models.size());
  for (size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::vector<int> counts(models.size(), 1);
  std::function<void(size_t, int)> rec = [&](size_t t, int left) {
    if (t + 1 == models.size()) {
      counts[t] = left;
      std::vector<std::vector<int>> g;
      for (size_t k : order) {
        const int size = static_cast<int>(models[k].second.size());
        if (counts[k] < 1 || size % counts[k] != 0) return;
        for (int i = 0; i < counts[k]; ++i) g.push_back(slice(models[k].second, i * (size / counts[k]), size / counts[k]));
      }
      out.push_back(g);
      return;
    }
    for (int c = 1; c <= left - static_cast<int>(models.size() - t - 1); ++c) {
      counts[t] = c;
      rec(t + 1, left - c);
    }
  };
  if (p < static_cast<int>(models.size())) return out;
  do {
    rec(0, p);
  } while (p <= kMaxReorderedDepth && std::next_permutation(order.begin(), order.end()));
  return out;
}

// The finished groups of one enumeration, each built once: equal (devices, tp) give the same
// group.
class GroupPool {
 public:
  explicit GroupPool(const Cluster& cluster) : cluster_(cluster) {}

  SharedGroup get(const std::vector<int>& devices, int tp) {
    unsigned long long hash = 1469598103934665603ull;  // FNV-1a over tp and the devices
    auto mix = [&](long long x) { hash = (hash ^ static_cast<unsigned long long>(x)) * 1099511628211ull; };
    mix(-tp);
    for (int d : devices) mix(d);
    std::vector<SharedGroup>& bucket = groups_[hash];
    for (const SharedGroup& g : bucket) {
      if (g->tp == tp && g->devices == devices) return g;
    }
    GroupSpec group{devices, tp, {}, {}, {}};
    finish_group(cluster_, group);
    bucket.push_back(std::make_shared<const GroupSpec>(std::move(group)));
    return bucket.back();
  }

 private:
  const Cluster& cluster_;
  std::unordered_map<unsigned long long, std::vector<SharedGroup>> groups_;
};

}  // namespace

void finish_group(const Cluster& cluster, GroupSpec& g) {
  g.kinds.clear();
  g.replica_kind.clear();
  g.replica_kind.reserve(g.dp());
  for (int r = 0; r < g.dp(); ++r) {
    const Device& d = cluster.devices[g.devices[r * g.tp]];
    const Link& intra = cluster.nodes[d.node].intra_link;
    size_t k = 0;
    while (k < g.kinds.size() &&
           !(g.kinds[k].model == d.model && g.kinds[k].intra_link.bandwidth_bytes_per_s == intra.bandwidth_bytes_per_s &&
             g.kinds[k].intra_link.latency_s == intra.latency_s)) {
      ++k;
    }
    if (k == g.kinds.size()) g.kinds.push_back(ReplicaKind{d.model, intra});
    g.replica_kind.push_back(static_cast<int>(k));
  }
  g.dp_ring = data_parallel_ring(cluster, g.devices, g.tp);
}

int Structure::max_dp() const {
  int m = 1;
  for (const auto& g : groups) m = std::max(m, g->dp());
  return m;
}

double gemm_peak_or_zero(const DeviceProfile& profile, Precision precision, const FrameworkPrecision& framework) {
  try {
    return profile.peak(effective_gemm_precision(precision, framework, profile));
  } catch (const Error&) {
    return 0.0;
  }
}

std::vector<int> ordered_devices(const Cluster& cluster, const std::vector<int>& usable,
                                 Precision precision, const FrameworkPrecision& framework) {
  std::set<int> keep(usable.begin(), usable.end());
  // One key per (node, model) block so that a mixed node contributes its blocks separately.
  using Key = std::tuple<double, double, int, int>;  // -memory, -peak, node, first device
  std::map<Key, std::vector<int>> blocks;
  std::map<std::pair<int, std::string>, Key> key_of;
  for (int d : usable) {
    const Device& dev = cluster.devices[d];
    auto id = std::make_pair(dev.node, dev.model);
    if (!key_of.count(id)) {
      const DeviceProfile& prof = cluster.profiles.at(dev.model);
      key_of[id] = Key{-prof.memory_bytes, -gemm_peak_or_zero(prof, precision, framework), dev.node, d};
    }
  }
  for (const Node& node : cluster.nodes) {
    for (int d : node.device_ids) {
      if (!keep.count(d)) continue;
      blocks[key_of.at({cluster.devices[d].node, cluster.devices[d].model})].push_back(d);
    }
  }
  std::vector<int> out;
  for (const auto& b : blocks) out.insert(out.end(), b.second.begin(), b.second.end());
  return out;
}

std::vector<int> tp_degrees(const Cluster& cluster, const Model& model, const std::vector<int>& devices) {
  const int most = most_in_one_node(cluster, devices);
  std::vector<int> out;
  for (int tp = 1; tp <= most; tp *= 2) {
    if (tp_splits_layers(model, tp)) out.push_back(tp);
  }
  return out;
}

std::vector<Structure> enumerate_structures(const Cluster& cluster, const Model& model,
                                            const SpaceLimits& limits,
                                            const std::function<bool(const Structure&)>& keep,
                                            const std::function<bool()>& stop) {
  const std::vector<int> ordered = ordered_devices(cluster, limits.devices, model.training.precision,
                                                     model.training.framework_precision);
  const auto models = by_model(cluster, ordered);
  const int n = static_cast<int>(ordered.size());
  const int layers = static_cast<int>(model.layers.size());
  // tp options per model (tp_degrees of its devices).
  std::vector<std::vector<int>> tp_options;
  for (const auto& m : models) tp_options.push_back(tp_degrees(cluster, model, m.second));
  std::vector<int> model_index(cluster.devices.size(), 0);  // by device id: index into models
  for (size_t t = 0; t < models.size(); ++t) {
    for (int d : models[t].second) model_index[d] = static_cast<int>(t);
  }
  std::vector<Structure> out;
  GroupPool pool(cluster);
  // The groups of every structure listed, held in an arena: a large space lists millions,
  // which are freed at once rather than one by one.
  std::pmr::monotonic_buffer_resource arena;
  std::pmr::set<std::pmr::vector<const GroupSpec*>, GroupsLess> seen(&arena);
  std::vector<const GroupSpec*> key;  // scratch: the structure being built
  long built = 0;  // groupings and structures built
  // Whether `stop` ends the enumeration: asked every kStopCheckInterval-th piece of work.
  auto stopping = [&] { return stop && ++built % kStopCheckInterval == 0 && stop(); };
  // The tp part of a label by the picks' index (mixed radix over the models' options), made once.
  size_t tp_combos = 1;
  for (const auto& o : tp_options) tp_combos *= o.size();
  std::vector<std::string> tp_labels(tp_combos);
  auto tp_label_of = [&](const std::vector<size_t>& pick) -> const std::string& {
    size_t index = 0;
    for (size_t t = models.size(); t-- > 0;) index = index * tp_options[t].size() + pick[t];
    std::string& label = tp_labels[index];
    if (label.empty()) {
      for (size_t t = 0; t < models.size(); ++t) {
        label += (t ? "," : "") + models[t].first + ":" + std::to_string(tp_options[t][pick[t]]);
      }
      label += "]";
    }
    return label;
  };
  for (int p = 1; p <= std::min(n, layers); ++p) {
    if (limits.max_pipeline_depth > 0 && p > limits.max_pipeline_depth) break;
    if (limits.fixed_stages > 0 && limits.fixed_stages % p != 0) continue;
    const std::string depth_label = "p" + std::to_string(p) + " tp[";
    const std::vector<std::vector<std::vector<int>>> all_groupings = groupings(ordered, models, p);
    for (size_t grouping_index = 0; grouping_index < all_groupings.size(); ++grouping_index) {
      const std::vector<std::vector<int>>& grouping = all_groupings[grouping_index];
      if (stopping()) return out;
      // Near-equal slices (the first grouping where p does not divide the devices) straddle
      // nodes at most degrees: their whole replicas would leave devices idle at every cut.
      const bool near_equal = grouping_index == 0 && n % p != 0 && p <= kMaxNearEqualDepth;
      // Per group: the device models it holds, and its finished group by the degree asked
      // (degrees are powers of two: indexed by their exponent).
      std::vector<std::vector<int>> models_in(grouping.size());
      std::vector<std::array<SharedGroup, 32>> by_degree(grouping.size());
      // Per group and degree its devices cannot all take: the group of its whole replicas at
      // that degree (the others idle), once asked; null where it holds none.
      std::vector<std::array<std::optional<SharedGroup>, 32>> trimmed(grouping.size());
      for (size_t g = 0; g < grouping.size(); ++g) {
        for (int d : grouping[g]) {
          std::vector<int>& in = models_in[g];
          if (std::find(in.begin(), in.end(), model_index[d]) == in.end()) in.push_back(model_index[d]);
        }
      }
      std::vector<size_t> pick(models.size(), 0);
      std::vector<const SharedGroup*> trims;   // per group of the structure being built
      // Lists `s` (labelled by `pick`, with `idle` devices left out) when it is new and kept.
      auto offer = [&](Structure& s, int idle) {
        key.clear();
        for (const SharedGroup& g : s.groups) key.push_back(g.get());
        auto at = seen.lower_bound(key);
        const bool is_new = at == seen.end() || GroupsLess()(key, *at);
        if (is_new) seen.emplace_hint(at, key.begin(), key.end());
        if (is_new && (!keep || keep(s))) {
          const std::string& tp_label = tp_label_of(pick);
          s.label.reserve(depth_label.size() + tp_label.size());
          s.label.append(depth_label).append(tp_label);
          if (idle > 0) s.label += " (" + std::to_string(idle) + " devices idle)";
          out.push_back(std::move(s));
        }
      };
      while (true) {
        if (stopping()) return out;
        // The degree of every group, then its groups: a structure is built only when new.
        Structure s;
        s.groups.reserve(grouping.size());
        // Where a group's devices cannot all take its degree, the same pipeline with its whole
        // replicas at that degree, the rest idle (a node of 2 beside nodes of 8 at tp 8): the
        // whole-replica group of each group that trims (null where none does), and the devices
        // they leave idle.
        trims.clear();
        int idle = 0;
        bool ok = true;
        for (size_t g = 0; g < grouping.size() && ok; ++g) {
          int tp = 0;
          for (int t : models_in[g]) {
            const int want = tp_options[t][pick[t]];
            if (tp != 0 && tp != want) ok = false;
            tp = want;
          }
          if (!ok) break;
          SharedGroup& group = by_degree[g][exponent_of(tp)];
          if (!group) {
            // A group the model's degree does not fit (an uneven slice) takes the largest
            // smaller power of two that does.
            int fitting = tp;
            while (fitting > 1 && !cluster.runs_inside_nodes(grouping[g], fitting)) fitting /= 2;
            group = pool.get(grouping[g], fitting);
          }
          s.groups.push_back(group);
          std::optional<SharedGroup>& whole = trimmed[g][exponent_of(tp)];
          if (group->tp != tp && !whole && !near_equal) {
            const std::vector<int> kept = whole_replicas(cluster, grouping[g], tp);
            whole = kept.empty() ? nullptr : pool.get(kept, tp);
          }
          if (group->tp != tp && !near_equal && *whole) {
            trims.push_back(&*whole);
            idle += static_cast<int>(grouping[g].size() - (*whole)->devices.size());
          } else {
            trims.push_back(nullptr);
          }
        }
        const bool trimmed_too = ok && idle > 0;
        Structure idle_some;
        if (trimmed_too) {
          idle_some.groups = s.groups;
          for (size_t g = 0; g < trims.size(); ++g)
            if (trims[g]) idle_some.groups[g] = *trims[g];
        }
        if (ok) offer(s, 0);
        if (trimmed_too) offer(idle_some, idle);
        size_t t = 0;
        while (t < pick.size() && ++pick[t] == tp_options[t].size()) pick[t++] = 0;
        if (t == pick.size()) break;
      }
    }
  }
  return out;
}

std::vector<Structure> uniform_structures(const Cluster& cluster, const Model& model,
                                          const std::vector<int>& devices) {
  const int n = static_cast<int>(devices.size());
  // Every stage of a uniform pipeline holds transformer blocks (the embedding and the head
  // ride in the first and last).
  const int blocks = static_cast<int>(
      std::count_if(model.layers.begin(), model.layers.end(), [](const Layer& l) { return !outer_kind(l.kind); }));
  std::vector<Structure> out;
  for (int p = 1; p <= std::min(n, std::max(1, blocks)); ++p) {
    if (n % p != 0) continue;
    for (int tp = 1; tp <= n / p; tp *= 2) {
      if ((n / p) % tp != 0 || !tp_splits_layers(model, tp)) continue;
      std::vector<GroupSpec> groups;
      for (int g = 0; g < p; ++g) groups.push_back(GroupSpec{slice(devices, g * (n / p), n / p), tp, {}, {}, {}});
      bool ok = true;
      for (const auto& g : groups) ok = ok && cluster.runs_inside_nodes(g.devices, tp);
      if (!ok) continue;
      Structure s;
      for (auto& g : groups) {
        finish_group(cluster, g);
        s.groups.push_back(std::make_shared<const GroupSpec>(std::move(g)));
      }
      s.label = "uniform pp" + std::to_string(p) + " tp" + std::to_string(tp) + " dp" + std::to_string(n / p / tp);
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<Choice> enumerate_choices(const Structure& structure, const Model& model,
                                      int global_batch, const SpaceLimits& limits) {
  auto allowed = [&](ScheduleKind k) {
    return limits.schedules.empty() ||
           std::find(limits.schedules.begin(), limits.schedules.end(), k) != limits.schedules.end();
  };
  const int p = static_cast<int>(structure.groups.size());
  const int layers = static_cast<int>(model.layers.size());
  std::vector<int> sizes;  // the divisors of the batch that give every replica a sample
  std::vector<int> large;  // global_batch / d for the small divisors d, descending
  for (int d = 1; d <= global_batch / d; ++d) {
    if (global_batch % d != 0) continue;
    if (d >= structure.max_dp()) sizes.push_back(d);
    if (d != global_batch / d && global_batch / d >= structure.max_dp()) large.push_back(global_batch / d);
  }
  sizes.insert(sizes.end(), large.rbegin(), large.rend());
  std::vector<Choice> out;
  for (int b : sizes) {
    const int m = global_batch / b;
    if (m > kMaxMicroBatches) continue;   // a plan holds at most so many (limits.h)
    auto add = [&](ScheduleKind kind, int chunks) {
      const int stages = p * chunks;
      if (limits.fixed_stages > 0 && stages != limits.fixed_stages) return;
      out.push_back(Choice{b, m, Schedule{kind, chunks}});
    };
    if (p == 1) {  // one group: gpipe only differs by holding more activations, zb-h1 not at all
      if (allowed(ScheduleKind::one_f_one_b)) {
        add(ScheduleKind::one_f_one_b, 1);
      } else if (allowed(ScheduleKind::gpipe)) {
        add(ScheduleKind::gpipe, 1);
      } else if (allowed(ScheduleKind::zb_h1)) {
        add(ScheduleKind::zb_h1, 1);
      }
      continue;
    }
    if (allowed(ScheduleKind::one_f_one_b)) add(ScheduleKind::one_f_one_b, 1);
    if (allowed(ScheduleKind::gpipe)) add(ScheduleKind::gpipe, 1);
    if (allowed(ScheduleKind::zb_h1)) add(ScheduleKind::zb_h1, 1);
    for (int v : limits.chunk_options) {
      if (p * v > layers) continue;
      if (allowed(ScheduleKind::interleaved_1f1b) && m % p == 0) add(ScheduleKind::interleaved_1f1b, v);
      if (allowed(ScheduleKind::wave)) add(ScheduleKind::wave, v);
    }
  }
  return out;
}

}  // namespace whale::plan

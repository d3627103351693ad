// File: alike_units.cpp
// The classes of alike replica units (alike_units.h): keys of bit patterns, refined by the
// classes of each unit's transfer partners until stable, then each representative's transfers
// routed to the representatives of the classes that receive them.
#include "alike_units.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

namespace whale::sim {
namespace {

using Key = std::vector<std::uint64_t>;

std::uint64_t bits(double x) {
  std::uint64_t out = 0;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

void push_list(Key* key, const std::vector<Seconds>& values) {
  key->push_back(values.size());
  for (Seconds v : values) key->push_back(bits(v));
}

/// Every figure of the engine's ReplicaCost, as bit patterns.
void push_cost(Key* key, const ReplicaCost& c) {
  for (double v : {c.forward_s, c.backward_s, c.backward_weight_s, c.recompute_s, c.tp_forward_s,
                   c.tp_backward_s, c.tp_recompute_s, c.model_flops}) {
    key->push_back(bits(v));
  }
  push_list(key, c.bucket_backward_s);
  push_list(key, c.bucket_tp_s);
  push_list(key, c.bucket_weight_s);
}

/// Where units and transfers sit: units by group and replica, and each transfer's position
/// among its sender's transfers of the same boundary and direction (the engine sends them in
/// to_next order, one after another).
struct UnitLayout {
  std::vector<int> group_of_stage;
  std::vector<int> group_of_unit, replica_of_unit;
  std::vector<std::vector<int>> activation_position;  // by boundary, transfer: among its from_replica's
  std::vector<std::vector<int>> gradient_position;    // by boundary, transfer: among its to_replica's
  // By boundary and receiving replica: the transfers whose activations (into stage boundary + 1)
  // or gradients (into stage boundary) land in its key.
  std::vector<std::vector<std::vector<int>>> activations_into, gradients_into;
};

UnitLayout unit_layout(const plan::ScheduleProgram& program, const CostTable& table,
                       std::vector<int>* group_first_unit) {
  UnitLayout out;
  out.group_of_stage.assign(table.stages.size(), 0);
  for (const plan::GroupProgram& g : program.groups) {
    for (int s : g.stages) out.group_of_stage[s] = g.group;
    group_first_unit->push_back(static_cast<int>(out.group_of_unit.size()));
    const int dp = static_cast<int>(table.stages[g.stages.front()].replicas.size());
    for (int r = 0; r < dp; ++r) {
      out.group_of_unit.push_back(g.group);
      out.replica_of_unit.push_back(r);
    }
  }
  for (const StageCost& stage : table.stages) {
    std::map<int, int> sent, sent_back;  // by replica: transfers so far
    std::vector<int>& forward = out.activation_position.emplace_back();
    std::vector<int>& backward = out.gradient_position.emplace_back();
    auto& into_next = out.activations_into.emplace_back();
    auto& into_this = out.gradients_into.emplace_back(stage.replicas.size());
    for (std::size_t i = 0; i < stage.to_next.size(); ++i) {
      const TransferCost& t = stage.to_next[i];
      forward.push_back(sent[t.from_replica]++);
      backward.push_back(sent_back[t.to_replica]++);
      if (static_cast<int>(into_next.size()) <= t.to_replica) into_next.resize(t.to_replica + 1);
      into_next[t.to_replica].push_back(static_cast<int>(i));
      into_this.at(t.from_replica).push_back(static_cast<int>(i));
    }
  }
  return out;
}

/// Class ids by first occurrence in unit order (so the lowest unit of a class comes first).
std::vector<int> number_classes(const std::vector<Key>& keys, int* count) {
  std::map<Key, int> ids;
  std::vector<int> out;
  out.reserve(keys.size());
  for (const Key& k : keys) out.push_back(ids.emplace(k, static_cast<int>(ids.size())).first->second);
  *count = static_cast<int>(ids.size());
  return out;
}

/// The (sender's class, position) pairs that land in the key of replica `replica` of the
/// receiving side of `boundary`, ascending and each once. `forward`: activations into stage
/// boundary + 1; otherwise gradients into stage boundary.
std::vector<std::pair<int, int>> incoming(const CostTable& table, const UnitLayout& layout,
                                          const std::vector<int>& group_first_unit,
                                          const std::vector<int>& cls, int boundary, bool forward,
                                          int replica) {
  std::vector<std::pair<int, int>> out;
  const std::vector<TransferCost>& transfers = table.stages[boundary].to_next;
  const int sender_stage = forward ? boundary : boundary + 1;
  const int first = group_first_unit[layout.group_of_stage[sender_stage]];
  const auto& into = forward ? layout.activations_into[boundary] : layout.gradients_into[boundary];
  if (replica >= static_cast<int>(into.size())) return out;
  for (int i : into[replica]) {
    const TransferCost& t = transfers[i];
    const int sender = first + (forward ? t.from_replica : t.to_replica);
    out.emplace_back(cls[sender], forward ? layout.activation_position[boundary][i]
                                          : layout.gradient_position[boundary][i]);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// The times of what replica `replica` sends across `boundary`, in to_next order: activations
/// (`forward`, as the sender on stage boundary: the transfers whose gradients come back into
/// it) or gradients (as the sender on stage boundary + 1: those whose activations came in).
void push_sends(const CostTable& table, const UnitLayout& layout, int boundary, bool forward, int replica,
                Key* key) {
  const auto& along = forward ? layout.gradients_into[boundary] : layout.activations_into[boundary];
  std::vector<Seconds> times;
  if (replica < static_cast<int>(along.size())) {
    for (int i : along[replica]) times.push_back(table.stages[boundary].to_next[i].time_s);
  }
  push_list(key, times);
}

void push_pairs(const std::vector<std::pair<int, int>>& pairs, Key* key) {
  key->push_back(pairs.size());
  for (const auto& [c, position] : pairs) {
    key->push_back(static_cast<std::uint64_t>(c));
    key->push_back(static_cast<std::uint64_t>(position));
  }
}

}  // namespace

UnitClasses each_unit_alone(const plan::ScheduleProgram& program, const CostTable& table) {
  UnitClasses out;
  const UnitLayout layout = unit_layout(program, table, &out.group_first_unit);
  out.classes = static_cast<int>(layout.group_of_unit.size());
  for (int u = 0; u < out.classes; ++u) out.representative.push_back(u);
  for (const StageCost& stage : table.stages) {
    auto& forward = out.activation_receivers.emplace_back();
    auto& backward = out.gradient_receivers.emplace_back();
    for (const TransferCost& t : stage.to_next) {
      forward.push_back({t.to_replica});
      backward.push_back({t.from_replica});
    }
  }
  return out;
}

UnitClasses alike_units(const plan::ScheduleProgram& program, const CostTable& table) {
  UnitClasses out;
  const UnitLayout layout = unit_layout(program, table, &out.group_first_unit);
  const int units = static_cast<int>(layout.group_of_unit.size());
  const int stages = static_cast<int>(table.stages.size());
  // Start: by group and every cost the engine reads of the unit.
  std::vector<Key> keys(units);
  for (int u = 0; u < units; ++u) {
    const plan::GroupProgram& g = program.groups[layout.group_of_unit[u]];
    const int r = layout.replica_of_unit[u];
    keys[u].push_back(static_cast<std::uint64_t>(g.group));
    for (int s : g.stages) {
      push_cost(&keys[u], table.stages[s].replicas[r]);
      keys[u].push_back(bits(table.stages[s].optimizer_s[r]));
      if (s + 1 < stages) push_sends(table, layout, s, true, r, &keys[u]);
      if (s > 0) push_sends(table, layout, s - 1, false, r, &keys[u]);
    }
  }
  std::vector<int> cls = number_classes(keys, &out.classes);
  // Refine by the classes of what lands in each key, until no class splits.
  for (int before = 0; before != out.classes;) {
    before = out.classes;
    for (int u = 0; u < units; ++u) {
      const int r = layout.replica_of_unit[u];
      Key key{static_cast<std::uint64_t>(cls[u])};
      for (int s : program.groups[layout.group_of_unit[u]].stages) {
        if (s > 0) push_pairs(incoming(table, layout, out.group_first_unit, cls, s - 1, true, r), &key);
        if (s + 1 < stages) push_pairs(incoming(table, layout, out.group_first_unit, cls, s, false, r), &key);
      }
      keys[u] = std::move(key);
    }
    cls = number_classes(keys, &out.classes);
  }
  std::vector<int> first_of_class(out.classes, -1);
  for (int u = 0; u < units; ++u) {
    if (first_of_class[cls[u]] < 0) first_of_class[cls[u]] = u;
    out.representative.push_back(first_of_class[cls[u]]);
  }
  // Route: each (class, position) pair a running receiver takes lands from the transfer at that
  // position of the class's representative.
  for (int b = 0; b + 1 < stages; ++b) {
    const std::vector<TransferCost>& transfers = table.stages[b].to_next;
    std::map<std::pair<int, int>, std::size_t> forward_at, backward_at;  // (sender replica, position)
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      forward_at[{transfers[i].from_replica, layout.activation_position[b][i]}] = i;
      backward_at[{transfers[i].to_replica, layout.gradient_position[b][i]}] = i;
    }
    auto& forward = out.activation_receivers.emplace_back(transfers.size());
    auto& backward = out.gradient_receivers.emplace_back(transfers.size());
    for (bool activation : {true, false}) {
      const int receiver_stage = activation ? b + 1 : b;
      const int first = out.group_first_unit[layout.group_of_stage[receiver_stage]];
      const int dp = static_cast<int>(table.stages[receiver_stage].replicas.size());
      for (int r = 0; r < dp; ++r) {
        if (!out.runs(first + r)) continue;
        for (const auto& [c, position] :
             incoming(table, layout, out.group_first_unit, cls, b, activation, r)) {
          const int sender = layout.replica_of_unit[first_of_class[c]];
          if (activation) forward[forward_at.at({sender, position})].push_back(r);
          else backward[backward_at.at({sender, position})].push_back(r);
        }
      }
    }
  }
  out.activation_receivers.resize(stages);  // the last stage sends nothing on
  out.gradient_receivers.resize(stages);
  return out;
}

}  // namespace whale::sim

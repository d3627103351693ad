// File: search_layout.cpp
// build_layout: shares, layer partition and memory rungs of one candidate, and its analytic
// step time (pipeline bottleneck and bubbles, p2p, exposed gradient reduction, optimizer).
#include "whale/plan/search_layout.h"

#include <algorithm>
#include <limits>
#include <set>

#include "whale/plan/layout_memo.h"
#include "whale/plan/search_experts.h"
#include "whale/plan/search_partition.h"

namespace whale::plan {
namespace {

struct ReplicaClass {
  std::string model;
  int share = 0;
  Link link;
  const ComputeTable* table = nullptr;
};

struct ModelShare {     // per device model of a group: its largest share and usable memory
  std::string model;
  int share = 0;
  Bytes usable_bytes = 0;
  const AnalyticModel::DeviceMemory* memory = nullptr;   // an.device_memory(model)
};

struct GroupInfo {
  int tp = 1, dp = 1;
  std::vector<int> shares;
  std::vector<ReplicaClass> classes;        // distinct (model, share, link)
  std::vector<ModelShare> model_max_share;
  Link dp_link;                              // slowest link between replicas
  int in_flight = 1;                         // micro-batches of activations per layer kept
  int weight_passes = -1;                    // zb-h1: micro-batches of weight-pass tensors held besides
};

// Share of a micro-batch's forward + backward time that is backward (GEMMs twice).
constexpr double kBackwardShare = 2.0 / 3.0;

int stage_group(const Schedule& schedule, int p, int s) {
  if (schedule.kind == ScheduleKind::wave && (s / p) % 2 == 1) return p - 1 - s % p;
  return s % p;
}

int in_flight_of(const Schedule& sch, int p, int g, int m) {
  switch (sch.kind) {
    case ScheduleKind::gpipe: return m;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1:  // activations to the input pass; the weight pass holds less
      return std::min(m, p - g);
    default: {  // Megatron's interleaving factor: (p - g) + (p - 1) / v, rounded up
      const int extra = (p - 1 + sch.chunks - 1) / sch.chunks;
      return std::min(m, p - g + extra);
    }
  }
}

// zb-h1's group g runs the weight pass of a micro-batch g input passes after its input pass
// (docs/plan.md, "zb-h1"): besides its p - g micro-batches of activations it holds the
// weight-pass tensors of g micro-batches (fewer when m is small), and at an input pass one
// micro-batch's activations turn into its weight-pass tensors. -1: no split backward.
int weight_passes_of(const Schedule& sch, int g, int m) {
  return sch.kind == ScheduleKind::zb_h1 ? std::min(m - 1, g) : -1;
}

GroupInfo group_info(AnalyticModel& an, const GroupSpec& g, const Choice& c, int index, int p,
                     bool even) {
  GroupInfo info;
  info.tp = g.tp;
  info.dp = g.dp();
  const int nominal = std::max(1, c.micro_batch_size / info.dp);
  std::vector<double> kind_speed;
  for (const ReplicaKind& k : g.kinds) kind_speed.push_back(1.0 / an.forward_s(k.model, g.tp, nominal, 0, an.layers()));
  std::vector<double> speeds;
  for (int k : g.replica_kind) speeds.push_back(kind_speed[k]);
  info.shares = even ? even_shares(c.micro_batch_size, info.dp)
                     : proportional_shares(c.micro_batch_size, speeds);
  info.dp_link = g.dp_link;
  std::vector<std::pair<int, int>> seen;  // (kind, share)
  for (int r = 0; r < info.dp; ++r) {
    const std::pair<int, int> key{g.replica_kind[r], info.shares[r]};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    const ReplicaKind& k = g.kinds[key.first];
    info.classes.push_back({k.model, key.second, k.intra_link, &an.table(k.model, g.tp, key.second)});
    auto it = std::find_if(info.model_max_share.begin(), info.model_max_share.end(),
                           [&](const ModelShare& e) { return e.model == k.model; });
    if (it == info.model_max_share.end()) {
      info.model_max_share.push_back({k.model, key.second, an.usable_bytes(k.model), &an.device_memory(k.model)});
    } else {
      it->share = std::max(it->share, key.second);
    }
  }
  info.in_flight = in_flight_of(c.schedule, p, index, c.micro_batches);
  info.weight_passes = weight_passes_of(c.schedule, index, c.micro_batches);
  return info;
}

// Transformer-count even split (embedding and head ride with their neighbours).
std::vector<int> even_boundaries(const Model& model, int stages) {
  std::vector<int> body;
  for (int i = 0; i < static_cast<int>(model.layers.size()); ++i) {
    const LayerKind k = model.layers[i].kind;
    if (k != LayerKind::embedding && k != LayerKind::head) body.push_back(i);
  }
  if (static_cast<int>(body.size()) < stages) return {};
  std::vector<int> b(1, 0);
  const int n = static_cast<int>(body.size());
  for (int s = 1; s < stages; ++s) b.push_back(body[static_cast<size_t>(s) * n / stages]);
  b.push_back(static_cast<int>(model.layers.size()));
  return b;
}

}  // namespace

// zb-h1 shrinks (p-1)(F+B+W) to (p-1)(F+B-W) (Qi et al. 2024), with W half the backward:
// (1/3 + 1/3 - 1/3) / 1 = 1/3.
double bubble_share(ScheduleKind kind) {
  const double weight_share = kBackwardShare / 2;
  return kind == ScheduleKind::zb_h1 ? 1.0 - 2.0 * weight_share : 1.0;
}

Recompute rung_recompute(int rung) {
  return rung >= 3 ? Recompute::full : rung == 2 ? Recompute::selective : Recompute::none;
}

bool rung_shards(int rung, int dp) { return rung >= 1 && dp > 1; }

bool rung_shards_gradients(int rung, int dp) { return rung >= 4 && dp > 1; }

int max_rung(const AnalyticModel& an) { return an.strategies().shard_gradients ? kMaxRung : 3; }

Layout build_layout(AnalyticModel& an, const Structure& st, const Choice& c, const LayoutRules& rules,
                    LayoutMemo* shared_memo) {
  const int p = static_cast<int>(st.groups.size());
  const int v = c.schedule.chunks;
  const int S = p * v;
  const int L = an.layers();
  std::vector<GroupInfo> gi;
  for (int g = 0; g < p; ++g) gi.push_back(group_info(an, *st.groups[g], c, g, p, rules.even_shares));
  std::vector<int> min_rung(p, 0);
  for (int g = 0; g < p && g < static_cast<int>(rules.min_rung.size()); ++g) min_rung[g] = rules.min_rung[g];
  LayoutMemo own_memo;
  LayoutMemo& memo = shared_memo ? *shared_memo : own_memo;
  std::vector<GroupRole> roles;
  for (int g = 0; g < p; ++g) {
    roles.push_back(GroupRole{memo.group_id(*st.groups[g]), c.micro_batch_size, rules.even_shares, gi[g].in_flight,
                              gi[g].weight_passes, v, min_rung[g]});
  }
  const std::vector<int> role = memo.role_ids(roles, L);
  const double inf = std::numeric_limits<double>::infinity();
  const int top_rung = max_rung(an);
  // The last stage keeps a copy of a tied token table when the first stage runs elsewhere: its
  // ranges cost more than the same ranges of another stage in the same role.
  const bool table_copy = an.model().tie_embeddings && S > 1 &&
                          stage_group(c.schedule, p, S - 1) != stage_group(c.schedule, p, 0);

  // Seconds per micro-batch of stage s over [a, e) at rung r (the slowest replica class).
  auto time_at = [&](int s, int a, int e, int r) {
    const int g = stage_group(c.schedule, p, s);
    double worst = 0;
    for (const ReplicaClass& rc : gi[g].classes) {
      const double t = rc.table->forward(a, e) + rc.table->backward(a, e) +
                       rc.table->recompute(a, e, rung_recompute(r)) +
                       2.0 * an.tp_comm_s(rc.link, gi[g].tp, rc.share, a, e);
      worst = std::max(worst, t);
    }
    return worst;
  };
  // Worst (need - usable) over the group's models at rung r; <= 0 when it fits. A stage of a
  // group running v chunks gets 1/v of the memory.
  auto gap_at = [&](int s, int a, int e, int r, Shortfall* out) {
    const int g = stage_group(c.schedule, p, s);
    double worst = -inf;
    for (const ModelShare& ms : gi[g].model_max_share) {
      MemoryNeed need = an.memory(*ms.memory, a, e, gi[g].tp, gi[g].dp, ms.share, gi[g].in_flight,
                                  rung_recompute(r), rung_shards(r, gi[g].dp),
                                  rung_shards_gradients(r, gi[g].dp), gi[g].weight_passes);
      if (s == S - 1 && table_copy) {
        need.state_bytes += an.table_copy_bytes(ms.model, gi[g].tp, gi[g].dp, rung_shards(r, gi[g].dp),
                                                rung_shards_gradients(r, gi[g].dp));
      }
      const double usable = ms.usable_bytes / v;
      if (need.total() - usable > worst) {
        worst = need.total() - usable;
        if (out) *out = Shortfall{need.total() * v, usable * v, need.state_bytes * v, st.groups[g]->devices[0], ms.model};
      }
    }
    return worst;
  };
  // Stage-aware recomputation: the cheapest rung (>= the group's minimum) at which the stage
  // fits; -1 when none does.
  auto rung_for = [&](int s, int a, int e) {
    const int g = stage_group(c.schedule, p, s);
    for (int r = min_rung[g]; r <= top_rung; ++r) {
      // Sharding over one replica changes nothing.
      if ((r == 1 || r == 4) && gi[g].dp == 1 && r > min_rung[g]) continue;
      if (gap_at(s, a, e, r, nullptr) <= 0) return r;
    }
    return -1;
  };
  // The partitions ask for the same ranges many times (every bisection step, every choice
  // that gives the group the same role); a range's cost depends on the stage only through its
  // group's role.
  auto cost = [&](int s, int a, int e) {
    if (s == S - 1 && table_copy) {
      const int r = rung_for(s, a, e);
      return r < 0 ? inf : time_at(s, a, e, r);
    }
    const int id = role[stage_group(c.schedule, p, s)];
    if (const double* known = memo.find(id, a, e)) return *known;
    const int r = rung_for(s, a, e);
    return memo.remember(id, a, e, r < 0 ? inf : time_at(s, a, e, r));
  };
  // A partition is determined by the roles of its stages (and, for the grouped one, by which
  // stages share a group): remembered under those.
  auto partition_key = [&](int kind) {
    std::vector<int> key{kind, S, table_copy ? 1 : 0};
    for (int s = 0; s < S; ++s) key.push_back(role[stage_group(c.schedule, p, s)]);
    if (kind == 1) {
      for (int s = 0; s < S; ++s) key.push_back(stage_group(c.schedule, p, s));
    }
    return key;
  };
  auto remembered = [&](int kind, auto compute) {
    const std::vector<int> key = partition_key(kind);
    if (const std::vector<int>* known = memo.partition(key)) return *known;
    std::vector<int> b = compute();
    memo.remember_partition(key, b);
    return b;
  };

  // Per-stage rungs of split b; empty when some stage fits at no rung.
  auto rungs_of = [&](const std::vector<int>& b) {
    std::vector<int> rungs(S, -1);
    for (int s = 0; s < S && !b.empty(); ++s) {
      rungs[s] = rung_for(s, b[s], b[s + 1]);
      if (rungs[s] < 0) return std::vector<int>{};
    }
    return b.empty() ? std::vector<int>{} : rungs;
  };
  // The stages of split b at `rungs`, and their analytic step time.
  auto lay_out = [&](const std::vector<int>& b, std::vector<int> rungs) {
    Layout out;
    if (rules.uniform_rung) std::fill(rungs.begin(), rungs.end(), *std::max_element(rungs.begin(), rungs.end()));
    out.rungs.assign(p, 0);
    for (int s = 0; s < S; ++s) {
      int& gr = out.rungs[stage_group(c.schedule, p, s)];
      gr = std::max(gr, rungs[s]);
    }
    out.fits = true;
    std::vector<double> group_time(p, 0), group_dp(p, 0), group_opt(p, 0);
    double p2p = 0;
    for (int s = 0; s < S; ++s) {
      const int g = stage_group(c.schedule, p, s);
      Stage stage;
      stage.first_layer = b[s];
      stage.end_layer = b[s + 1];
      stage.devices = st.groups[g]->devices;
      stage.tp = gi[g].tp;
      stage.shares = gi[g].shares;
      stage.recompute = rung_recompute(rungs[s]);
      stage.shard_optimizer = rung_shards(rungs[s], gi[g].dp);
      stage.shard_gradients = rung_shards_gradients(rungs[s], gi[g].dp);
      stage.sequence_parallel = an.sequence_parallel(gi[g].tp);
      if (an.model().moe) {
        const ExpertLayout experts = choose_expert_layout(an.model(), an.cluster(), stage.devices, stage.tp);
        stage.ep = experts.ep;
        stage.expert_tp = experts.expert_tp;
      }
      out.stages.push_back(stage);
      group_time[g] += time_at(s, b[s], b[s + 1], rungs[s]);
      group_dp[g] += an.dp_comm_s(gi[g].dp_link, gi[g].tp, gi[g].dp, b[s], b[s + 1]);
      double opt = 0;
      for (const auto& ms : gi[g].model_max_share) {
        opt = std::max(opt, an.optimizer_s(ms.model, b[s], b[s + 1], gi[g].tp, gi[g].dp, stage.shard_optimizer));
      }
      // A sharded optimizer (ZeRO-1 and -2) all-gathers the updated weights after its step.
      if (stage.shard_optimizer) opt += an.dp_gather_s(gi[g].dp_link, gi[g].tp, gi[g].dp, b[s], b[s + 1]);
      group_opt[g] += opt;
      if (s + 1 < S) {
        const int h = stage_group(c.schedule, p, s + 1);
        if (h != g) {
          // As the simulator prices it: every tp rank of the receiver takes its part at once
          // on its own link share, its 1/tp sequence slice under sequence parallelism; a sender
          // feeding several receivers sends to them one after another. Forward, the largest
          // sender sends its whole share; backward, the largest receiver sends its share back.
          const Link link = an.cluster().concurrent_link_between(st.groups[g]->devices[0], st.groups[h]->devices[0]);
          const int from_tp = gi[g].tp, to_tp = gi[h].tp;
          const bool sliced = an.sequence_parallel(from_tp) && an.sequence_parallel(to_tp);
          const int receivers_per_sender = (to_tp + from_tp - 1) / from_tp;
          const Bytes bytes_per_sample = an.boundary_bytes(b[s + 1]) / (sliced ? to_tp : 1);
          for (const GroupInfo* side : {&gi[g], &gi[h]}) {
            const int most = *std::max_element(side->shares.begin(), side->shares.end());
            p2p += receivers_per_sender * link.time_for(bytes_per_sample * most);
          }
        }
      }
    }
    const double slowest = *std::max_element(group_time.begin(), group_time.end());
    double total = 0;
    for (double t : group_time) total += t;
    // Gradient reduction overlaps the last micro-batch's backward (about two thirds of a
    // group's per-micro-batch time); only the rest is exposed.
    double exposed_dp = 0;
    for (int g = 0; g < p; ++g) exposed_dp = std::max(exposed_dp, group_dp[g] - kBackwardShare * group_time[g]);
    // Chunks shrink the fill and drain by v only when every group has a micro-batch to run
    // while the others fill (m >= p); with fewer, a wave's micro-batches cross the stages
    // one after another.
    const int bubble_divisor = c.micro_batches >= p ? v : 1;
    out.estimate_s = c.micro_batches * slowest +
                     bubble_share(c.schedule.kind) * (total - slowest) / bubble_divisor + p2p + exposed_dp +
                     *std::max_element(group_opt.begin(), group_opt.end());
    return out;
  };

  const RangeFits any = [](int, int, int) { return true; };
  const bool free_split = rules.fixed_boundaries.empty() && !rules.even_layers;
  std::vector<int> b;
  if (!free_split) {
    b = rules.fixed_boundaries.empty() ? even_boundaries(an.model(), S) : rules.fixed_boundaries;
  } else {
    b = remembered(0, [&] {
      double upper = 0;  // every fitting range costs at most this
      for (int s = 0; s < S; ++s) upper = std::max(upper, time_at(s, 0, L, top_rung));
      return partition_layers(L, S, cost, any, upper);
    });
  }
  Layout best;
  std::vector<int> rungs = rungs_of(b);
  if (!rungs.empty() && (rules.split != Split::per_group || v == 1)) best = lay_out(b, rungs);
  // With several stages per group, a group's time is the sum over its chunks, which the
  // per-stage min-max split does not balance.
  if (free_split && v > 1 && rules.split != Split::per_stage && !b.empty()) {
    std::vector<int> group_of(S);
    std::vector<double> sum(p, 0.0);
    for (int s = 0; s < S; ++s) {
      group_of[s] = stage_group(c.schedule, p, s);
      sum[group_of[s]] += cost(s, b[s], b[s + 1]);
    }
    const double most = *std::max_element(sum.begin(), sum.end());
    const std::vector<int> grouped = remembered(1, [&] {
      return most < inf ? partition_layers_grouped(L, group_of, cost, any, most / v, most) : std::vector<int>{};
    });
    const bool same = best.fits && grouped == b;  // nothing new to lay out
    const std::vector<int> grouped_rungs = same ? std::vector<int>{} : rungs_of(grouped);
    if (!grouped_rungs.empty()) {
      Layout alt = lay_out(grouped, grouped_rungs);
      alt.split = Split::per_group;
      if (best.fits) {
        alt.other_split_estimate_s = best.estimate_s;
        best.other_split_estimate_s = alt.estimate_s;
      }
      if (!best.fits || alt.estimate_s < best.estimate_s) best = std::move(alt);
    }
  }
  if (best.fits) return best;
  // Report the gap at the compute-balanced split with every saving switched on.
  if (b.empty()) {
    b = partition_layers(
        L, S, [&](int s, int a, int e) { return time_at(s, a, e, top_rung); }, any);
  }
  best.shortfall.need_bytes = -1;
  for (int s = 0; s < S && !b.empty(); ++s) {
    Shortfall sf;
    if (gap_at(s, b[s], b[s + 1], top_rung, &sf) > best.shortfall.gap() || best.shortfall.need_bytes < 0) best.shortfall = sf;
  }
  return best;
}

const std::vector<double>& StructureFigures::kind_speeds(const GroupSpec& g, int share) {
  auto it = speeds_.find({&g, share});
  if (it != speeds_.end()) return it->second;
  AnalyticModel& an = analytic_;
  std::vector<double> speeds;
  for (const ReplicaKind& k : g.kinds) {
    const ComputeTable& t = an.table(k.model, g.tp, share);
    // Tensor-parallel all-reduces (forward and backward) count as build_layout counts them.
    const double tp_s = 2.0 * an.tp_comm_s(k.intra_link, g.tp, share, 0, an.layers());
    speeds.push_back(1.0 / ((t.forward(0, an.layers()) + t.backward(0, an.layers()) + tp_s) / share));
  }
  return speeds_.emplace(std::make_pair(&g, share), std::move(speeds)).first->second;
}

Seconds StructureFigures::bound_s(const Structure& st, int micro_batch_size, int global_batch) {
  double speed = 0;  // samples per second of all groups, each as if it held the whole model
  for (const SharedGroup& group : st.groups) {
    // The largest share any replica can get: more samples never lower the efficiency.
    const int share = std::max(1, micro_batch_size - group->dp() + 1);
    const std::vector<double>& kind_speed = kind_speeds(*group, share);
    for (int k : group->replica_kind) speed += kind_speed[k];
  }
  const int p = static_cast<int>(st.groups.size());
  const double m = global_batch / micro_batch_size;
  return global_batch / speed * (1.0 + (p - 1) / (4.0 * m));
}

double StructureFigures::group_best_speed(const GroupSpec& g, int global_batch) {
  if (global_batch != best_speed_batch_) {
    best_speed_.clear();
    best_speed_batch_ = global_batch;
    batch_divisors_.clear();
    for (int d = 1; d <= global_batch / d; ++d) {
      if (global_batch % d != 0) continue;
      batch_divisors_.push_back(d);
      if (d != global_batch / d) batch_divisors_.push_back(global_batch / d);
    }
  }
  auto it = best_speed_.find(&g);
  if (it != best_speed_.end()) return it->second;
  std::vector<double> best(g.kinds.size(), 0.0);
  for (int b : batch_divisors_) {
    if (b < g.dp()) continue;  // no replica would get a sample
    const std::vector<double>& speeds = kind_speeds(g, std::max(1, b - g.dp() + 1));  // as bound_s
    for (size_t k = 0; k < best.size(); ++k) best[k] = std::max(best[k], speeds[k]);
  }
  double speed = 0;
  for (int k : g.replica_kind) speed += best[k];
  return best_speed_[&g] = speed;
}

Seconds StructureFigures::least_bound_s(const Structure& st, int smallest_micro_batch_size, int global_batch) {
  // Summed in another order than bound_s sums: a relative margin far above the rounding error
  // of a thousand terms keeps it below every bound_s.
  constexpr double kRoundingMargin = 1e-9;
  double speed = 0;
  for (const SharedGroup& group : st.groups) speed += group_best_speed(*group, global_batch);
  const int p = static_cast<int>(st.groups.size());
  const double m = global_batch / smallest_micro_batch_size;  // the most micro-batches
  return global_batch / speed * (1.0 + (p - 1) / (4.0 * m)) * (1.0 - kRoundingMargin);
}

StructureFigures::GroupLayers& StructureFigures::group_layers(const GroupSpec& g, int micro_batch_size,
                                                              bool even_shares) {
  const auto key = std::make_tuple(&g, micro_batch_size, even_shares);
  auto it = group_layers_.find(key);
  if (it != group_layers_.end()) return it->second;
  AnalyticModel& an = analytic_;
  const int L = an.layers();
  const int top = max_rung(an);
  const Choice choice{micro_batch_size, 1, Schedule{ScheduleKind::one_f_one_b, 1}};
  const GroupInfo info = group_info(an, g, choice, 0, 1, even_shares);
  // The slowest replica class over the whole model: its layers' times bound the group's.
  const ReplicaClass* slowest = nullptr;
  double slowest_s = -1;
  for (const ReplicaClass& rc : info.classes) {
    const double t = rc.table->forward(0, L) + rc.table->backward(0, L) + 2.0 * an.tp_comm_s(rc.link, g.tp, rc.share, 0, L);
    if (t > slowest_s) {
      slowest_s = t;
      slowest = &rc;
    }
  }
  GroupLayers layers;
  const auto time_key = std::make_tuple(slowest->model, g.tp, slowest->share, slowest->link.bandwidth_bytes_per_s,
                                        slowest->link.latency_s);
  auto rows = time_rows_.find(time_key);
  if (rows == time_rows_.end()) {
    std::vector<std::vector<double>> prefix;
    std::vector<double> unsorted;
    for (int r = 0; r <= top; ++r) {
      std::vector<double> t;
      std::vector<double> blocks;
      for (int l = 0; l < L; ++l) {
        t.push_back(slowest->table->forward(l, l + 1) + slowest->table->backward(l, l + 1) +
                    slowest->table->recompute(l, l + 1, rung_recompute(r)) +
                    2.0 * an.tp_comm_s(slowest->link, g.tp, slowest->share, l, l + 1));
        if (!outer_layer(l)) blocks.push_back(t.back());
      }
      if (r == 0) unsorted = t;
      t = std::move(blocks);
      std::sort(t.begin(), t.end());
      std::vector<double> row(1, 0.0);
      for (double x : t) row.push_back(row.back() + x);
      prefix.push_back(std::move(row));
    }
    prefix.push_back(std::move(unsorted));
    rows = time_rows_.emplace(time_key, std::move(prefix)).first;
  }
  layers.time_prefix = &rows->second;
  // A reduction costs a latency term plus a part linear in the layers' parameters.
  const double latency_s = g.dp() > 1 ? 2.0 * (g.dp() - 1) * g.dp_link.latency_s : 0.0;
  std::vector<double> linear;
  for (int l = 0; l < L; ++l) linear.push_back(std::max(0.0, an.dp_comm_s(g.dp_link, g.tp, g.dp(), l, l + 1) - latency_s));
  std::sort(linear.begin(), linear.end());
  layers.reduction_prefix.assign(1, 0.0);
  for (double x : linear) layers.reduction_prefix.push_back(layers.reduction_prefix.back() + x);
  for (size_t k = 1; k < layers.reduction_prefix.size(); ++k) {
    if (layers.reduction_prefix[k] > 0) layers.reduction_prefix[k] += latency_s;
  }
  for (const ModelShare& ms : info.model_max_share) {
    const auto model_key = std::make_tuple(ms.model, g.tp, g.dp());
    auto figures = per_model_.find(model_key);
    if (figures == per_model_.end()) {
      // Memory is additive over layers but for full recomputation's one rebuilt layer and
      // zb-h1's weight passes (left out: the verdict stays a relaxation). The kept bytes per
      // micro-batch in flight are the difference between two and one in flight.
      std::vector<std::vector<double>> per_rung;
      std::vector<double> least(2 * static_cast<size_t>(L), std::numeric_limits<double>::infinity());
      for (int r = 0; r <= top; ++r) {
        std::vector<double> row;
        for (int l = 0; l < L; ++l) {
          auto need = [&](int in_flight) {
            return an.memory(ms.model, l, l + 1, g.tp, g.dp(), 1, in_flight, rung_recompute(r), rung_shards(r, g.dp()),
                             rung_shards_gradients(r, g.dp()));
          };
          const MemoryNeed one = need(1);
          row.push_back(one.state_bytes);
          row.push_back(need(2).activation_bytes - one.activation_bytes);
          least[2 * l] = std::min(least[2 * l], row[2 * l]);
          least[2 * l + 1] = std::min(least[2 * l + 1], row[2 * l + 1]);
        }
        per_rung.push_back(std::move(row));
      }
      per_rung.push_back(std::move(least));
      figures = per_model_.emplace(model_key, std::move(per_rung)).first;
    }
    layers.models.emplace_back(ms.share, ms.usable_bytes, &figures->second);
  }
  return group_layers_.emplace(key, std::move(layers)).first->second;
}

const std::vector<int>& StructureFigures::most_layers(const GroupSpec& g, GroupLayers& layers, int in_flight) {
  auto it = layers.most_layers.find(in_flight);
  if (it != layers.most_layers.end()) return it->second;
  const int L = analytic_.layers();
  const size_t rows = static_cast<size_t>(max_rung(analytic_)) + 2;
  std::vector<int> most(rows, L);
  std::vector<double> need;
  for (const auto& [share, usable, figures] : layers.models) {
    for (size_t r = 0; r < rows; ++r) {
      const std::vector<double>& f = (*figures)[r];
      need.clear();
      for (int l = 0; l < L; ++l) {
        if (!outer_layer(l)) need.push_back(f[2 * l] + f[2 * l + 1] * share * in_flight);
      }
      std::sort(need.begin(), need.end());
      int k = 0;
      for (double sum = 0; k < static_cast<int>(need.size()) && sum + need[k] <= usable; ++k) sum += need[k];
      most[r] = std::min(most[r], k);
    }
  }
  (void)g;
  return layers.most_layers.emplace(in_flight, std::move(most)).first->second;
}

bool StructureFigures::outer_layer(int layer) const {
  const LayerKind kind = analytic_.model().layers[layer].kind;
  return kind == LayerKind::embedding || kind == LayerKind::head;
}

Seconds StructureFigures::memory_bound_s(const Structure& st, int micro_batch_size, int global_batch,
                                         bool even_shares, bool one_chunk, double bubble_factor) {
  // Summed in another order than build_layout sums: a relative margin far above the rounding.
  constexpr double kRoundingMargin = 1e-9;
  const double cheap = bound_s(st, micro_batch_size, global_batch);
  AnalyticModel& an = analytic_;
  const int p = static_cast<int>(st.groups.size());
  const int m = global_batch / micro_batch_size;
  const int L = an.layers();
  const int top = max_rung(an);
  struct Curve {
    const std::vector<std::vector<double>>* time;
    const std::vector<int>* most;
  };
  std::vector<Curve> curves;
  double hi = 0;
  // The outer layers (embedding, head) may go to any group free: each group counts only the
  // blocks it takes (at their least time and memory), and the blocks and the outer layers
  // together must make up the model.
  int outer = 0;
  for (int l = 0; l < L; ++l) outer += outer_layer(l);
  long most_total = outer;
  for (int g = 0; g < p; ++g) {
    GroupLayers& layers = group_layers(*st.groups[g], micro_batch_size, even_shares);
    const std::vector<int>& most = most_layers(*st.groups[g], layers, std::min(m, p - g));
    curves.push_back(Curve{layers.time_prefix, &most});
    most_total += one_chunk ? *std::max_element(most.begin(), most.begin() + top + 1) : most[top + 1];
    for (int r = 0; r <= top; ++r) hi = std::max(hi, (*layers.time_prefix)[r].back());
  }
  if (most_total < L) return std::numeric_limits<double>::infinity();
  // Whether the groups can take every layer within T seconds per micro-batch each.
  auto within = [&](double T) {
    long total = outer;
    for (const Curve& c : curves) {
      auto count = [&](int r, int cap) {
        const std::vector<double>& row = (*c.time)[r];
        const int k = static_cast<int>(std::upper_bound(row.begin(), row.end(), T) - row.begin()) - 1;
        return std::min(k, cap);
      };
      int best = 0;
      if (one_chunk) {
        for (int r = 0; r <= top; ++r) best = std::max(best, count(r, (*c.most)[r]));
      } else {
        best = count(0, (*c.most)[top + 1]);   // recomputation only adds time
      }
      total += best;
      if (total >= L) return true;
    }
    return false;
  };
  double lo = 0;
  for (int i = 0; i < 40 && hi - lo > 1e-7 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (within(mid) ? hi : lo) = mid;
  }
  // The estimate is m S + bubble (total - S) + max over groups of (reduction - 2/3 time) + more
  // terms >= 0, with S the slowest group's time (>= lo) and total the summed group times
  // (>= each layer at its fastest group, and >= S); some group holds ceil(L / p) layers or
  // more, so its reduction is at least the least such over the groups. A piecewise linear
  // function of S: least at lo or at a break.
  double total = 0;
  for (int l = 0; l < L; ++l) {
    double fastest = std::numeric_limits<double>::infinity();
    for (const Curve& c : curves) fastest = std::min(fastest, (*c.time)[top + 1][l]);
    total += fastest;
  }
  double reduction = std::numeric_limits<double>::infinity();
  const int most_held = (L + p - 1) / p;
  for (int g = 0; g < p; ++g) {
    reduction = std::min(reduction, group_layers(*st.groups[g], micro_batch_size, even_shares).reduction_prefix[most_held]);
  }
  auto estimate_at = [&](double S) {
    return m * S + bubble_factor * (std::max(total, S) - S) + std::max(0.0, reduction - kBackwardShare * S);
  };
  double least = estimate_at(lo);
  for (double S : {total, reduction / kBackwardShare}) {
    if (S > lo) least = std::min(least, estimate_at(S));
  }
  return std::max(cheap, least * (1.0 - kRoundingMargin));
}

double StructureFigures::group_hold_fraction(const GroupSpec& g) {
  auto it = held_.find(&g);
  if (it != held_.end()) return it->second;
  AnalyticModel& an = analytic_;
  double held = std::numeric_limits<double>::infinity();
  const std::string* last = nullptr;
  for (int d : g.devices) {
    const std::string& m = an.cluster().devices[d].model;
    if (last && *last == m) continue;
    last = &m;
    const MemoryNeed whole = an.memory(m, 0, an.layers(), g.tp, g.dp(), 1, 0, Recompute::full, g.dp() > 1,
                                       g.dp() > 1 && an.strategies().shard_gradients);
    held = std::min(held, an.usable_bytes(m) / whole.state_bytes);
  }
  return held_[&g] = std::min(1.0, held);
}

double StructureFigures::hold_fraction(const Structure& st) {
  double held = 0;  // fraction of the model's state the groups can hold
  for (const SharedGroup& group : st.groups) held += group_hold_fraction(*group);
  return held;
}

Seconds structure_bound_s(AnalyticModel& an, const Structure& st, int micro_batch_size,
                          int global_batch) {
  return StructureFigures(an).bound_s(st, micro_batch_size, global_batch);
}

double structure_hold_fraction(AnalyticModel& an, const Structure& st) {
  return StructureFigures(an).hold_fraction(st);
}

void apply_layout(Plan& plan, const Choice& choice, const Layout& layout) {
  plan.precision = plan.model.training.precision;
  plan.framework_precision = plan.model.training.framework_precision;
  plan.micro_batch_size = choice.micro_batch_size;
  plan.micro_batches = choice.micro_batches;
  plan.schedule = choice.schedule;
  plan.stages = layout.stages;
}

}  // namespace whale::plan

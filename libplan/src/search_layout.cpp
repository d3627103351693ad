// File: search_layout.cpp
// build_layout: shares, layer partition and memory rungs of one candidate, and its analytic
// step time (pipeline bottleneck and bubbles, p2p, exposed gradient reduction, optimizer).
#include "whale/plan/search_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "group_info.h"
#include "whale/plan/layout_memo.h"
#include "whale/plan/search_experts.h"
#include "whale/plan/search_partition.h"

namespace whale::plan {
namespace {

// Transformer-count even split (embedding and head ride with their neighbours).
std::vector<int> even_boundaries(const Model& model, int stages) {
  std::vector<int> body;
  for (int i = 0; i < static_cast<int>(model.layers.size()); ++i) {
    if (!outer_kind(model.layers[i].kind)) body.push_back(i);
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
  // stage_group of every stage, read for every range the partitions price.
  std::vector<int> group_of_stage(S);
  for (int s = 0; s < S; ++s) group_of_stage[s] = stage_group(c.schedule, p, s);
  LayoutMemo own_memo;
  LayoutMemo& memo = shared_memo ? *shared_memo : own_memo;
  // Each group's shares and classes (the memo's, kept across layouts) and the micro-batches it
  // keeps in flight under this schedule.
  memo.start_layout();
  std::vector<const GroupInfo*> gi;
  std::vector<int> in_flight(p), weight_passes(p);
  for (int g = 0; g < p; ++g) {
    gi.push_back(&memo.group_info(an, *st.groups[g], c.micro_batch_size, rules.even_shares));
    in_flight[g] = in_flight_of(c.schedule, p, g, c.micro_batches);
    weight_passes[g] = weight_passes_of(c.schedule, g, c.micro_batches);
  }
  std::vector<int> min_rung(p, 0);
  for (int g = 0; g < p && g < static_cast<int>(rules.min_rung.size()); ++g) min_rung[g] = rules.min_rung[g];
  std::vector<GroupRole> roles;
  for (int g = 0; g < p; ++g) {
    roles.push_back(GroupRole{memo.group_id(*st.groups[g]), c.micro_batch_size, rules.even_shares, in_flight[g],
                              weight_passes[g], v, min_rung[g]});
  }
  const std::vector<int> role = memo.role_ids(roles, L);
  const double inf = std::numeric_limits<double>::infinity();
  const int top_rung = max_rung(an);
  // The last stage keeps a copy of a tied token table (Plan::last_stage_holds_table_copy): its
  // ranges cost more than the same ranges of another stage in the same role.
  const bool table_copy = an.model().tie_embeddings && S > 1;

  // Seconds per micro-batch of stage s over [a, e) at rung r (the slowest replica class).
  auto time_at = [&](int s, int a, int e, int r) {
    const int g = group_of_stage[s];
    double worst = 0;
    for (const ReplicaClass& rc : gi[g]->classes) {
      const double t = rc.table->forward(a, e) + rc.table->backward(a, e) +
                       rc.table->recompute(a, e, rung_recompute(r)) +
                       2.0 * an.tp_comm_s(rc.link, gi[g]->tp, rc.share, a, e);
      worst = std::max(worst, t);
    }
    return worst;
  };
  // Seconds by which stage 0's gradient reduction over [a, e) at rung r outlasts its last
  // micro-batch's backward: the layers' backward runs from e - 1 down to a (the slowest
  // replica class; under zb-h1 the weight pass, half the backward's compute), each layer's
  // reduction starts once the pass is done with it and the stream is free (the simulator's
  // buckets, one layer each), and the ring's latencies count once.
  auto first_stage_reduction_tail_s = [&](int a, int e, int r) {
    const int g = group_of_stage[0];
    if (gi[g]->dp <= 1) return 0.0;
    const bool weight_pass = c.schedule.kind == ScheduleKind::zb_h1;
    const double latency_s = gi[g]->dp_ring.latency_s();
    double backward_s = 0, reduced_s = 0;
    for (int l = e - 1; l >= a; --l) {
      double worst = 0;
      for (const ReplicaClass& rc : gi[g]->classes) {
        const double pass_s = weight_pass ? 0.5 * rc.table->backward(l, l + 1)
                                          : rc.table->backward(l, l + 1) +
                                                rc.table->recompute(l, l + 1, rung_recompute(r)) +
                                                an.tp_comm_s(rc.link, gi[g]->tp, rc.share, l, l + 1);
        worst = std::max(worst, pass_s);
      }
      backward_s += worst;
      const double layer_s = std::max(0.0, an.dp_comm_s(gi[g]->dp_ring, gi[g]->tp, gi[g]->dp, l, l + 1) - latency_s);
      reduced_s = std::max(reduced_s, backward_s) + layer_s;
    }
    return std::max(0.0, reduced_s + latency_s - backward_s);
  };
  // Worst (need - usable) over the group's models at rung r; <= 0 when it fits. A stage of a
  // group running v chunks gets 1/v of the memory.
  auto gap_at = [&](int s, int a, int e, int r, Shortfall* out) {
    const int g = group_of_stage[s];
    double worst = -inf;
    for (const ModelShare& ms : gi[g]->model_max_share) {
      MemoryNeed need = an.memory(*ms.memory, a, e, gi[g]->tp, gi[g]->dp, ms.share, in_flight[g],
                                  rung_recompute(r), rung_shards(r, gi[g]->dp),
                                  rung_shards_gradients(r, gi[g]->dp), weight_passes[g]);
      if (s == S - 1 && table_copy) {
        need.state_bytes += an.table_copy_bytes(ms.model, gi[g]->tp, gi[g]->dp, rung_shards(r, gi[g]->dp),
                                                rung_shards_gradients(r, gi[g]->dp));
      }
      const double usable = ms.usable_bytes / v;
      if (need.total() - usable > worst) {
        worst = need.total() - usable;
        if (out) {
          // A device of that model (a group may mix models).
          const std::vector<int>& devices = st.groups[g]->devices;
          const auto of_model = std::find_if(devices.begin(), devices.end(), [&](int d) {
            return an.cluster().devices[d].model == ms.model;
          });
          *out = Shortfall{need.total() * v, usable * v, need.state_bytes * v,
                           of_model != devices.end() ? *of_model : devices[0], ms.model};
        }
      }
    }
    return worst;
  };
  // Stage-aware recomputation: the cheapest rung (>= the group's minimum) at which the stage
  // fits; -1 when none does.
  auto rung_for = [&](int s, int a, int e) {
    const int g = group_of_stage[s];
    for (int r = min_rung[g]; r <= top_rung; ++r) {
      // Sharding over one replica changes nothing.
      if ((r == 1 || r == 4) && gi[g]->dp == 1 && r > min_rung[g]) continue;
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
    const int id = role[group_of_stage[s]];
    if (const double* known = memo.find(id, a, e)) return *known;
    const int r = rung_for(s, a, e);
    return memo.remember(id, a, e, r < 0 ? inf : time_at(s, a, e, r));
  };
  // A partition is determined by the roles of its stages (and, for the grouped one, by which
  // stages share a group): remembered under those.
  auto partition_key = [&](int kind) {
    std::vector<int> key{kind, S, table_copy ? 1 : 0};
    for (int s = 0; s < S; ++s) key.push_back(role[group_of_stage[s]]);
    if (kind == 1) {
      for (int s = 0; s < S; ++s) key.push_back(group_of_stage[s]);
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
      int& gr = out.rungs[group_of_stage[s]];
      gr = std::max(gr, rungs[s]);
    }
    out.fits = true;
    std::vector<double> group_time(p, 0), group_dp(p, 0), group_opt(p, 0), stage_dp(S, 0);
    // Per group, the seconds its busiest replica spends sending one micro-batch's activations
    // forward and gradients backward: its sends share one stream (as in the simulator), so a
    // pipeline over a slow link runs at no more than one micro-batch per that time.
    std::vector<double> group_send(p, 0);
    double p2p = 0;
    for (int s = 0; s < S; ++s) {
      const int g = group_of_stage[s];
      Stage stage;
      stage.first_layer = b[s];
      stage.end_layer = b[s + 1];
      stage.devices = st.groups[g]->devices;
      stage.tp = gi[g]->tp;
      stage.shares = gi[g]->shares;
      stage.recompute = rung_recompute(rungs[s]);
      stage.shard_optimizer = rung_shards(rungs[s], gi[g]->dp);
      stage.shard_gradients = rung_shards_gradients(rungs[s], gi[g]->dp);
      stage.sequence_parallel = an.sequence_parallel(gi[g]->tp);
      if (an.model().moe) {
        const ExpertLayout experts = choose_expert_layout(an.model(), an.cluster(), stage.devices, stage.tp);
        stage.ep = experts.ep;
        stage.expert_tp = experts.expert_tp;
      }
      out.stages.push_back(stage);
      group_time[g] += time_at(s, b[s], b[s + 1], rungs[s]);
      stage_dp[s] = an.dp_comm_s(gi[g]->dp_ring, gi[g]->tp, gi[g]->dp, b[s], b[s + 1]);
      group_dp[g] += stage_dp[s];
      double opt = 0;
      for (const auto& ms : gi[g]->model_max_share) {
        opt = std::max(opt, an.optimizer_s(ms.model, b[s], b[s + 1], gi[g]->tp, gi[g]->dp, stage.shard_optimizer));
      }
      // A sharded optimizer (ZeRO-1 and -2) all-gathers the updated weights after its step.
      if (stage.shard_optimizer) opt += an.dp_gather_s(gi[g]->dp_ring, gi[g]->tp, gi[g]->dp, b[s], b[s + 1]);
      group_opt[g] += opt;
      if (s + 1 < S) {
        const int h = group_of_stage[s + 1];
        if (h != g) {
          // As the simulator prices it: every tp rank of the receiver takes its part at once
          // on its own link share, its 1/tp sequence slice under sequence parallelism; a sender
          // feeding several receivers sends to them one after another. Forward, the largest
          // sender sends its whole share; backward, the largest receiver sends its share back.
          const Link link = an.cluster().concurrent_link_between(st.groups[g]->devices[0], st.groups[h]->devices[0]);
          const int from_tp = gi[g]->tp, to_tp = gi[h]->tp;
          const bool sliced = an.sequence_parallel(from_tp) && an.sequence_parallel(to_tp);
          const int receivers_per_sender = (to_tp + from_tp - 1) / from_tp;
          const Bytes bytes_per_sample = an.boundary_bytes(b[s + 1]) / (sliced ? to_tp : 1);
          const int most_g = *std::max_element(gi[g]->shares.begin(), gi[g]->shares.end());
          const int most_h = *std::max_element(gi[h]->shares.begin(), gi[h]->shares.end());
          const double forward_s = receivers_per_sender * link.time_for(bytes_per_sample * most_g);
          const double backward_s = receivers_per_sender * link.time_for(bytes_per_sample * most_h);
          p2p += forward_s + backward_s;
          group_send[g] += forward_s;
          group_send[h] += backward_s;
        }
      }
    }
    const double slowest = *std::max_element(group_time.begin(), group_time.end());
    const double period = std::max(slowest, *std::max_element(group_send.begin(), group_send.end()));
    double total = 0;
    for (double t : group_time) total += t;
    // Chunks shrink the fill and drain by v only when every group has a micro-batch to run
    // while the others fill (m >= p); with fewer, a wave's micro-batches cross the stages
    // one after another.
    const int bubble_divisor = c.micro_batches >= p ? v : 1;
    double pipelined = c.micro_batches * period + bubble_share(c.schedule.kind) * (total - slowest) / bubble_divisor;
    // Under 1F1B and zb-h1 the first group starts a micro-batch only once the one p micro-batches
    // before it came back through every stage and boundary (its input pass under zb-h1: the
    // weight passes wait aside), so the micro-batches take at least m / p such round trips;
    // over slow links the sends set that pace.
    if (v == 1 && c.micro_batches >= p && p > 1 &&
        (c.schedule.kind == ScheduleKind::one_f_one_b || c.schedule.kind == ScheduleKind::zb_h1)) {
      const double on_the_way = c.schedule.kind == ScheduleKind::zb_h1 ? 1.0 - kBackwardShare / 2 : 1.0;
      pipelined = std::max(pipelined, c.micro_batches * (on_the_way * total + p2p) / p);
    }
    // Gradient reduction overlaps the group's last backward (about two thirds of a group's
    // per-micro-batch time; reduction_window); only the rest is exposed. Under
    // interleaved-1f1b each chunk's reduction follows on the group's stream once its own last
    // backward is done, highest chunk first.
    double exposed_dp = 0;
    const double window = reduction_window(c.schedule, p, c.micro_batches);
    for (int g = 0; g < p; ++g) {
      double exposed = group_dp[g] - window * kBackwardShare * group_time[g];
      if (c.schedule.kind == ScheduleKind::interleaved_1f1b && v > 1) {
        const double chunk_backward_s = kBackwardShare * group_time[g] / v;
        const int q = std::min(c.micro_batches, p);
        double reduced_s = -std::numeric_limits<double>::infinity();   // from the group's last backward's end
        for (int j = v - 1; j >= 0; --j) {
          reduced_s = std::max(reduced_s, -(j * q + 1) * chunk_backward_s) + stage_dp[j * p + g];
        }
        exposed = reduced_s;
      }
      exposed_dp = std::max(exposed_dp, exposed);
    }
    // The first stage's last backward (or weight pass) ends the step, so its reduction is
    // exposed as far as it outruns that pass layer by layer: a layer's gradients are reduced
    // once the pass is done with them, one reduction after another on the group's stream.
    exposed_dp = std::max(exposed_dp, first_stage_reduction_tail_s(b[0], b[1], rungs[0]));
    out.estimate_s = pipelined + p2p + exposed_dp + *std::max_element(group_opt.begin(), group_opt.end());
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
    std::vector<double> sum(p, 0.0);
    for (int s = 0; s < S; ++s) sum[group_of_stage[s]] += cost(s, b[s], b[s + 1]);
    const double most = *std::max_element(sum.begin(), sum.end());
    const std::vector<int> grouped = remembered(1, [&] {
      return most < inf ? partition_layers_grouped(L, group_of_stage, cost, any, most / v, most) : std::vector<int>{};
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

void apply_layout(Plan& plan, const Choice& choice, const Layout& layout) {
  plan.precision = plan.model.training.precision;
  plan.framework_precision = plan.model.training.framework_precision;
  plan.micro_batch_size = choice.micro_batch_size;
  plan.micro_batches = choice.micro_batches;
  plan.schedule = choice.schedule;
  plan.stages = layout.stages;
}

}  // namespace whale::plan

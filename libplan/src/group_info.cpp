// File: group_info.cpp
// group_info and the schedule's figures per group (group_info.h).
#include "group_info.h"

#include <algorithm>
#include <utility>

#include "whale/plan/search_partition.h"

namespace whale::plan {

int stage_group(const Schedule& schedule, int p, int s) {
  if (schedule.kind == ScheduleKind::wave && (s / p) % 2 == 1) return p - 1 - s % p;
  return s % p;
}

int weight_passes_of(const Schedule& sch, int g, int m) {
  return sch.kind == ScheduleKind::zb_h1 ? std::min(m - 1, g) : -1;
}

double reduction_window(const Schedule& sch, int p, int m) {
  if (sch.kind == ScheduleKind::zb_h1) return 0.5;
  if (sch.kind != ScheduleKind::interleaved_1f1b || sch.chunks <= 1) return 1.0;
  const int v = sch.chunks;
  return ((v - 1.0) * std::min(m, p) + 1.0) / v;
}

GroupInfo group_info(AnalyticModel& an, const GroupSpec& g, int micro_batch_size, bool even) {
  GroupInfo info;
  info.tp = g.tp;
  info.dp = g.dp();
  const int nominal = std::max(1, micro_batch_size / info.dp);
  std::vector<double> kind_speed;
  for (const ReplicaKind& k : g.kinds) kind_speed.push_back(1.0 / an.forward_s(k.model, g.tp, nominal, 0, an.layers()));
  std::vector<double> speeds;
  for (int k : g.replica_kind) speeds.push_back(kind_speed[k]);
  info.shares = even ? even_shares(micro_batch_size, info.dp) : proportional_shares(micro_batch_size, speeds);
  info.dp_ring = g.dp_ring;
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
  return info;
}

}  // namespace whale::plan

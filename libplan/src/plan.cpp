// File: plan.cpp
// Names of schedules and recomputation modes, replica queries of a stage, and the rule that
// places stages on device groups.
#include "whale/plan/plan.h"

#include <algorithm>

#include "whale/plan/error.h"

namespace whale::plan {
namespace {

constexpr ScheduleKind kScheduleKinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,
                                           ScheduleKind::interleaved_1f1b, ScheduleKind::wave,
                                           ScheduleKind::zb_h1};
constexpr Recompute kRecomputes[] = {Recompute::none, Recompute::full, Recompute::selective};

}  // namespace

const char* to_string(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::gpipe: return "gpipe";
    case ScheduleKind::one_f_one_b: return "1f1b";
    case ScheduleKind::interleaved_1f1b: return "interleaved-1f1b";
    case ScheduleKind::wave: return "wave";
    case ScheduleKind::zb_h1: return "zb-h1";
  }
  return "?";
}

bool parse_schedule_kind(const std::string& text, ScheduleKind* out) {
  for (ScheduleKind k : kScheduleKinds) {
    if (text == to_string(k)) { *out = k; return true; }
  }
  return false;
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::full: return "full";
    case Recompute::selective: return "selective";
  }
  return "?";
}

bool parse_recompute(const std::string& text, Recompute* out) {
  for (Recompute r : kRecomputes) {
    if (text == to_string(r)) { *out = r; return true; }
  }
  return false;
}

int Stage::replicas() const {
  if (mixed_tp()) return static_cast<int>(replica_tps.size());
  return tp > 0 ? static_cast<int>(devices.size()) / tp : 0;
}

int Stage::replica_offset(int r) const {
  if (!mixed_tp()) return r * tp;
  int offset = 0;
  for (int i = 0; i < r; ++i) offset += replica_tps.at(i);
  return offset;
}

Stage Stage::as_replica(int r) const {
  Stage view = *this;
  view.tp = replica_tp(r);
  return view;
}

std::vector<int> Stage::replica_devices(int r) const {
  const int first = replica_offset(r);
  return std::vector<int>(devices.begin() + first, devices.begin() + first + replica_tp(r));
}

std::vector<int> Stage::piece_holders(int piece) const {
  std::vector<int> holders;
  for (int r = 0; r < replicas(); ++r)
    holders.push_back(devices.at(replica_offset(r) + piece * replica_tp(r) / tp));
  return holders;
}

std::vector<int> Stage::expert_parallel_group(int d, int t) const {
  const int etp = expert_tp_degree();
  std::vector<int> group;
  for (int e = 0; e < ep; ++e) group.push_back(devices[(d * ep + e) * etp + t]);
  return group;
}

std::vector<int> Stage::expert_data_parallel_group(int e, int t) const {
  const int etp = expert_tp_degree();
  std::vector<int> group;
  for (int d = 0; d < expert_dp(); ++d) group.push_back(devices[(d * ep + e) * etp + t]);
  return group;
}

std::vector<int> Stage::expert_token_gather_group(int d, int e, int a) const {
  const int etp = expert_tp_degree();
  std::vector<int> group;
  for (int j = 0; j < etp / tp; ++j) group.push_back(devices[(d * ep + e) * etp + j * tp + a]);
  return group;
}

ExpertOwnership Stage::expert_ownership(int experts) const {
  return ExpertOwnership(experts, ep, expert_counts);
}

int Stage::experts_held(int rank, int experts) const {
  return expert_ownership(experts).count(rank);
}

int Stage::first_expert_held(int rank, int experts) const {
  return expert_ownership(experts).first(rank);
}

int Stage::first_sample(int r) const {
  int first = 0;
  for (int i = 0; i < r; ++i) first += shares[i];
  return first;
}

bool Stage::holds(int device) const {
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

int Stage::index_of(int device) const {
  const auto at = std::find(devices.begin(), devices.end(), device);
  if (at == devices.end()) {
    throw Error("", "devices",
                "one of the stage's devices " + format_device_list(devices) + ", got device " + std::to_string(device),
                "ask only for a device the stage holds (Stage::holds)");
  }
  return static_cast<int>(at - devices.begin());
}

int Plan::pipeline_groups() const {
  const int chunks = schedule.chunks > 0 ? schedule.chunks : 1;
  return static_cast<int>(stages.size()) / chunks;
}

int Plan::group_of_stage(int s) const {
  return whale::plan::group_of_stage(schedule.kind, pipeline_groups(), schedule.chunks, s);
}

bool Plan::last_stage_holds_table_copy() const {
  const int last = static_cast<int>(stages.size()) - 1;
  return model.tie_embeddings && last > 0;
}

bool Plan::tied_table_copies_split_alike() const {
  const Stage& first = stages.front();
  const Stage& last = stages.back();
  return !first.mixed_tp() && !last.mixed_tp() && first.tp == last.tp;
}

bool Plan::reduces_gradients(int s) const {
  const Stage& stage = stages.at(s);
  return stage.dp() > 1 || (model.moe.has_value() && stage.expert_dp() > 1);
}

int group_of_stage(ScheduleKind kind, int groups, int chunks, int stage) {
  if (groups <= 0) return stage;
  switch (kind) {
    case ScheduleKind::gpipe:
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1:
      return chunks <= 1 ? stage : stage % groups;
    case ScheduleKind::interleaved_1f1b:
      return stage % groups;
    case ScheduleKind::wave: {
      const int chunk = stage / groups;
      const int position = stage % groups;
      return chunk % 2 == 0 ? position : groups - 1 - position;
    }
  }
  return stage;
}

}  // namespace whale::plan

// File: layout_memo.cpp
// LayoutMemo: range costs by (role, first layer, end layer), cleared row by row when first
// written in a generation; partitions by key; roles by the values of their groups.
#include "whale/plan/layout_memo.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "group_info.h"

namespace whale::plan {

bool GroupRole::operator<(const GroupRole& o) const {
  return std::tie(group, micro_batch_size, even_shares, in_flight, weight_passes, chunks, min_rung) <
         std::tie(o.group, o.micro_batch_size, o.even_shares, o.in_flight, o.weight_passes, o.chunks, o.min_rung);
}

bool LayoutMemo::GroupValue::operator<(const GroupValue& o) const {
  return std::tie(tp, kinds, replica_kind) < std::tie(o.tp, o.kinds, o.replica_kind);
}

int LayoutMemo::group_id(const GroupSpec& group) {
  const auto known = id_of_group_.find(&group);
  if (known != id_of_group_.end()) return known->second;
  GroupValue value{group.tp, {}, group.replica_kind};
  for (const ReplicaKind& k : group.kinds) {
    value.kinds.emplace_back(k.model, k.intra_link.kind, k.intra_link.bandwidth_bytes_per_s, k.intra_link.latency_s);
  }
  const int id = group_ids_.emplace(std::move(value), static_cast<int>(group_ids_.size())).first->second;
  id_of_group_.emplace(&group, id);
  return id;
}

void LayoutMemo::forget() {
  ids_.clear();
  partitions_.clear();
  ++generation_;
}

std::vector<int> LayoutMemo::role_ids(const std::vector<GroupRole>& roles, int layers) {
  if (layers != layers_ || roles.size() > capacity_) {
    // Rows are written before they are read (their stamps say which are current), so the
    // costs need no initial values.
    forget();
    layers_ = layers;
    row_ = static_cast<size_t>(layers) + 1;
    capacity_ = std::max(kMaxRoles, roles.size());
    costs_.reset(new double[capacity_ * row_ * row_]);
    row_stamp_.assign(capacity_ * row_, 0);
  }
  if (ids_.size() + roles.size() > capacity_) forget();
  std::vector<int> out;
  for (const GroupRole& role : roles) {
    auto it = ids_.find(role);
    if (it == ids_.end()) {
      const int id = static_cast<int>(ids_.size());
      it = ids_.emplace(role, id).first;
    }
    out.push_back(it->second);
  }
  return out;
}

double* LayoutMemo::find(int id, int a, int e) {
  const size_t row = static_cast<size_t>(id) * row_ + a;
  if (row_stamp_[row] != generation_) return nullptr;
  double* cost = &costs_[row * row_ + e];
  return std::isnan(*cost) ? nullptr : cost;
}

double LayoutMemo::remember(int id, int a, int e, double cost) {
  const size_t row = static_cast<size_t>(id) * row_ + a;
  if (row_stamp_[row] != generation_) {
    std::fill_n(costs_.get() + row * row_, row_,
                std::numeric_limits<double>::quiet_NaN());
    row_stamp_[row] = generation_;
  }
  return costs_[row * row_ + e] = cost;
}

const std::vector<int>* LayoutMemo::partition(const std::vector<int>& key) const {
  auto it = partitions_.find(key);
  return it == partitions_.end() ? nullptr : &it->second;
}

void LayoutMemo::remember_partition(const std::vector<int>& key, const std::vector<int>& boundaries) {
  partitions_[key] = boundaries;
}

LayoutMemo::LayoutMemo() = default;
LayoutMemo::~LayoutMemo() = default;

void LayoutMemo::start_layout() {
  if (group_infos_.size() > kMaxGroupInfos) group_infos_.clear();
}

const GroupInfo& LayoutMemo::group_info(AnalyticModel& analytic, const GroupSpec& group, int micro_batch_size,
                                        bool even) {
  std::unique_ptr<GroupInfo>& kept = group_infos_[{&group, micro_batch_size, even}];
  if (!kept) kept = std::make_unique<GroupInfo>(plan::group_info(analytic, group, micro_batch_size, even));
  return *kept;
}

}  // namespace whale::plan

// File: layout_memo.h
// LayoutMemo: what build_layout computes about a group's shares, its layer ranges and a
// pipeline's layer partitions, remembered between the layouts of one search (the choices of a
// structure repeat the same groups in the same roles: gpipe and 1f1b at as many micro-batches
// in flight, and interleaved-1f1b and wave at the same chunk count).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "whale/plan/search_space.h"

namespace whale::plan {

class AnalyticModel;   // search_estimate.h
struct GroupInfo;      // group_info.h (libplan's own)

/// Everything a range's cost depends on besides the range: the group's values
/// (LayoutMemo::group_id), its shares (micro-batch size and whether they are even), the
/// micro-batches of activations (and of zb-h1 weight-pass tensors) it keeps in flight, the
/// stages it runs (chunks, each with 1/chunks of the memory) and its lowest memory rung.
struct GroupRole {
  int group = 0;   // LayoutMemo::group_id
  int micro_batch_size = 0;
  bool even_shares = false;
  int in_flight = 0;
  int weight_passes = -1;  // zb-h1: micro-batches of weight-pass tensors held besides; -1: other schedules
  int chunks = 1;
  int min_rung = 0;
  bool operator<(const GroupRole& o) const;
};

/// Remembers range costs per group role and partitions per sequence of roles. Used by one
/// search with one AnalyticModel at a time (the groups must outlive it); not thread-safe.
/// Forgets everything once it holds kMaxRoles roles, so its memory stays bounded.
class LayoutMemo {
 public:
  static constexpr size_t kMaxRoles = 64;
  /// Groups' figures kept at most (start_layout forgets them all past it).
  static constexpr size_t kMaxGroupInfos = 4096;

  LayoutMemo();
  ~LayoutMemo();
  LayoutMemo(const LayoutMemo&) = delete;
  LayoutMemo& operator=(const LayoutMemo&) = delete;

  /// Called before a layout's group_info calls: may forget every group's figures (their
  /// references with them), so that the memory stays bounded.
  void start_layout();
  /// group_info(analytic, group, micro_batch_size, even), computed once per (group,
  /// micro_batch_size, even) and kept by the group's address (as group_id: the search's groups
  /// are immutable and outlive the memo); the reference is valid until start_layout forgets it.
  const GroupInfo& group_info(AnalyticModel& analytic, const GroupSpec& group, int micro_batch_size, bool even);

  /// One id per distinct group value that range costs depend on: tp and, in replica order,
  /// each replica's device model and intra-node link. Not the device ids: alike groups on
  /// other nodes (most of a big cluster's) share their costs. Ids are never forgotten.
  int group_id(const GroupSpec& group);

  /// The ids of `roles` (one layout's) for find and the partition keys, valid until the next
  /// call, which may forget every earlier id. `layers` is the model's layer count (the same in
  /// every call).
  std::vector<int> role_ids(const std::vector<GroupRole>& roles, int layers);
  /// The remembered cost of layers [a, e) in role `id`, or null; remember() then stores it.
  double* find(int id, int a, int e);
  double remember(int id, int a, int e, double cost);

  /// The remembered partition under `key` (role ids and whatever else determines it), or null.
  const std::vector<int>* partition(const std::vector<int>& key) const;
  void remember_partition(const std::vector<int>& key, const std::vector<int>& boundaries);

 private:
  void forget();
  // GroupSpec's values as group_id compares them: tp, then per kind its model, link kind,
  // bandwidth and latency, then the replicas' kinds.
  struct GroupValue {
    int tp = 1;
    std::vector<std::tuple<std::string, std::string, double, double>> kinds;
    std::vector<int> replica_kind;
    bool operator<(const GroupValue& o) const;
  };
  std::map<GroupValue, int> group_ids_;
  // group_id of each group asked about, by address: a search's groups are immutable and
  // outlive the memo (the class's contract), so the address stands for the values read.
  std::unordered_map<const GroupSpec*, int> id_of_group_;
  std::map<GroupRole, int> ids_;
  int layers_ = 0;
  size_t row_ = 0;                            // layers + 1: entries per (role, first layer)
  size_t capacity_ = 0;                       // roles that costs_ has room for
  std::unique_ptr<double[]> costs_;           // by (id, a, e); NaN: not known (in a current row)
  std::vector<unsigned long long> row_stamp_; // by (id, a): generation_ when the row was cleared
  unsigned long long generation_ = 1;
  std::map<std::vector<int>, std::vector<int>> partitions_;
  // group_info's results by (group, micro-batch size, even shares).
  std::map<std::tuple<const GroupSpec*, int, bool>, std::unique_ptr<GroupInfo>> group_infos_;
};

}  // namespace whale::plan

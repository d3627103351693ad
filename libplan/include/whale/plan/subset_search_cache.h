// File: subset_search_cache.h
// SubsetSearchCache: the best plans of the searches over some device models' devices alone
// (the upper bound's search of each device model, the strongest models together), kept for
// the other searches of one whale-plan command. The precision advice's search finds there the
// searches its precision shares with the model's: on devices that price both precisions
// alike (precision_pricing.h), each search runs in the standing precision and once.
#pragma once

#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/cost_model.h"
#include "whale/plan/model.h"

namespace whale::plan {

struct RankedPlan;        // planner.h
struct PlannerOptions;    // planner.h

class SubsetSearchCache {
 public:
  /// What a search over a set of devices depends on: the cluster, the model (its training
  /// precision the standing one), the devices, the cost model (by identity: one per command),
  /// and the options the engine reads.
  struct Key {
    Cluster cluster;
    Model model;
    std::vector<int> devices;
    const CostModel* cost = nullptr;
    int global_batch = 0;
    long max_evaluations = 0;
    bool prune_with_bound = true;
    int simulate_budget = 0;
    int exhaustive_below = 0;
    bool sequence_parallel = true;
    bool shard_gradients = true;
    bool operator==(const Key& o) const;
  };
  /// The key of a search of `model` over `devices` with `options` (global_batch resolved).
  static Key key_of(const Cluster& cluster, const Model& model, const std::vector<int>& devices,
                    const CostModel& cost, const PlannerOptions& options, int global_batch);

  /// The best plan of `search` for `key` and whether it found one: `search` runs on the first
  /// ask (outside the lock), and an ask while it runs waits for it. A search that throws
  /// throws to every ask. Thread-safe.
  RankedPlan get(Key key, bool* found, const std::function<RankedPlan(bool*)>& search);

  /// Searches held, run or running (for tests).
  std::size_t size() const;
  /// Asks answered from a search already run or running (for tests).
  std::size_t shared_asks() const;

 private:
  struct Result;
  struct Entry {
    Key key;
    std::shared_future<std::shared_ptr<const Result>> result;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;   // few: one per device set, precision and batch a command searches
  std::size_t shared_asks_ = 0;
};

}  // namespace whale::plan

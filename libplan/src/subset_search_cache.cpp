// File: subset_search_cache.cpp
// SubsetSearchCache (subset_search_cache.h).
#include "whale/plan/subset_search_cache.h"

#include <tuple>

#include "whale/plan/input_equality.h"
#include "whale/plan/planner.h"

namespace whale::plan {

struct SubsetSearchCache::Result {
  RankedPlan best;
  bool found = false;
};

bool SubsetSearchCache::Key::operator==(const Key& o) const {
  const auto fields = [](const Key& k) {
    return std::tie(k.cluster, k.model, k.devices, k.cost, k.global_batch, k.max_evaluations, k.prune_with_bound,
                    k.simulate_budget, k.exhaustive_below, k.sequence_parallel, k.shard_gradients);
  };
  return fields(*this) == fields(o);
}

SubsetSearchCache::Key SubsetSearchCache::key_of(const Cluster& cluster, const Model& model,
                                                 const std::vector<int>& devices, const CostModel& cost,
                                                 const PlannerOptions& options, int global_batch) {
  return Key{cluster,
             model,
             devices,
             &cost,
             global_batch,
             options.max_evaluations,
             options.prune_with_bound,
             options.simulate_budget,
             options.exhaustive_below,
             options.strategies.sequence_parallel,
             options.strategies.shard_gradients};
}

RankedPlan SubsetSearchCache::get(Key key, bool* found, const std::function<RankedPlan(bool*)>& search) {
  std::promise<std::shared_ptr<const Result>> promise;
  std::shared_future<std::shared_ptr<const Result>> result;
  bool run_here = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : entries_) {
      if (e.key == key) {
        result = e.result;
        ++shared_asks_;
        break;
      }
    }
    if (!result.valid()) {
      result = promise.get_future().share();
      entries_.push_back(Entry{std::move(key), result});
      run_here = true;
    }
  }
  if (run_here) {
    try {
      auto r = std::make_shared<Result>();
      r->best = search(&r->found);
      promise.set_value(std::move(r));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  const std::shared_ptr<const Result>& r = result.get();   // rethrows the search's error
  *found = r->found;
  return r->best;
}

std::size_t SubsetSearchCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

std::size_t SubsetSearchCache::shared_asks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shared_asks_;
}

}  // namespace whale::plan

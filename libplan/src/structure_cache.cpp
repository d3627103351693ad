// File: structure_cache.cpp
// StructureCache (structure_cache.h).
#include "whale/plan/structure_cache.h"

#include <algorithm>
#include <tuple>

#include "whale/plan/input_equality.h"

namespace whale::plan {

bool StructureCache::Key::operator==(const Key& o) const {
  return std::tie(cluster, model, devices, max_pipeline_depth, fixed_stages, sequence_parallel, shard_gradients) ==
         std::tie(o.cluster, o.model, o.devices, o.max_pipeline_depth, o.fixed_stages, o.sequence_parallel,
                  o.shard_gradients);
}

SharedStructures StructureCache::get(const Cluster& cluster, const Model& model, const SpaceLimits& limits,
                                     const SearchStrategies& strategies, long* left_out,
                                     const std::function<std::vector<Structure>(long*, bool*)>& make) {
  Key key{cluster, model, limits.devices, limits.max_pipeline_depth, limits.fixed_stages, strategies.sequence_parallel,
          strategies.shard_gradients};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : entries_) {
      if (e.key == key) {
        *left_out = e.left_out;
        return e.structures;
      }
    }
  }
  // Two threads asking for the same key at once both compute it: the same structures (the
  // enumeration is deterministic), of which the first stays.
  Entry entry{std::move(key), {}, 0};
  bool complete = true;
  entry.structures = std::make_shared<const std::vector<Structure>>(make(&entry.left_out, &complete));
  *left_out = entry.left_out;
  if (!complete) return entry.structures;
  std::lock_guard<std::mutex> lock(mutex_);
  const bool known = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == entry.key; });
  if (!known) entries_.push_back(entry);
  return entry.structures;
}

std::size_t StructureCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace whale::plan

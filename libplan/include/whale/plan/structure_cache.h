// File: structure_cache.h
// StructureCache: the structures a search lays out (the pipelines of device groups that can
// hold the model's state), kept for the later searches of one whale-plan command on the same
// cluster and model. They do not depend on the global batch, so the batch advice's re-plans
// at other batches (and the upper bound's per-model searches there) reuse them.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"
#include "whale/plan/search_estimate.h"
#include "whale/plan/search_space.h"

namespace whale::plan {

class StructureCache {
 public:
  /// The structures of (cluster, model, limits, strategies), and how many the search left out
  /// before its engine: `make` computes them the first time they are asked for (outside the
  /// lock: searches on other threads go on), then shared by every ask. Thread-safe.
  /// `make` sets its bool to false when what it returns is incomplete (a time limit cut it):
  /// that is returned but not kept, and the next ask makes them again.
  /// Keyed by the values of the cluster and model (a copy of each is kept), so callers may
  /// pass temporaries and copies: equal ones share their structures.
  SharedStructures get(const Cluster& cluster, const Model& model, const SpaceLimits& limits,
                       const SearchStrategies& strategies, long* left_out,
                       const std::function<std::vector<Structure>(long*, bool*)>& make);

  /// Computed sets held (for tests).
  std::size_t size() const;

 private:
  struct Key {
    Cluster cluster;
    Model model;   // its training precision included
    std::vector<int> devices;
    int max_pipeline_depth = 0;
    int fixed_stages = 0;
    bool sequence_parallel = true;
    bool shard_gradients = true;
    bool operator==(const Key& o) const;
  };
  struct Entry {
    Key key;
    SharedStructures structures;
    long left_out = 0;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;   // few: one per (precision, device set) a command searches
};

}  // namespace whale::plan

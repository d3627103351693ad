// File: mixed_tp_packing.h
// Private: how one rank of a stage whose replicas run at different tp degrees (plan::Stage::
// replica_tps) takes part in the data-parallel gradient exchange: which elements of its flat
// gradient buffer form each finest piece it holds, packed in the one order every holder packs
// them, and where the replicated parameters go.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/model/stage_module.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/gradient_buckets.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// `count` gradients from element `flat_offset` of the flat gradient buffer, at element
/// `pack_offset` of a pack buffer.
struct GradientSegment {
  std::size_t flat_offset = 0;
  std::size_t pack_offset = 0;
  std::size_t count = 0;
};

/// The gradients of one bucket that one all-reduce sums, packed back to back.
struct PackedGradients {
  /// 0 .. tp - 1: finest piece `group` of the tp-split parameters, summed over
  /// Stage::piece_holders(group); tp (the stage's largest replica tp): the tp-replicated
  /// parameters, summed over every device of the stage.
  int group = 0;
  std::vector<GradientSegment> segments;  // ascending pack_offset, covering [0, count)
  std::size_t count = 0;                  // packed floats
  /// False: this rank adds zeros. A replicated parameter's gradient is the same on every tp
  /// rank of a replica, so only tp rank 0 of each replica puts it in: once per replica.
  bool contributes = true;
};

/// Per bucket of `buckets` (plan::gradient_buckets of the stage), the all-reduces of the rank
/// at `role` in mixed-tp stage `stage` whose module holds `parameters` (their gradients back to
/// back in that order): one per finest piece it holds, ascending, then one for the replicated
/// parameters; a collective with nothing to sum in a bucket (the same for all its members) is
/// left out. Piece j of a split parameter is its tp-rank-j shard at the stage's largest tp,
/// packed in that shard's element order: the members of a piece's group pack the same elements
/// in the same order whatever their own tp. Throws std::logic_error when a piece is not inside
/// this rank's shard (the degrees do not nest; validate_plan refuses such plans).
std::vector<std::vector<PackedGradients>> mixed_tp_packing(
    const plan::Model& model, const plan::Stage& stage, const StageRole& role,
    const std::vector<ParameterView>& parameters, const std::vector<plan::GradientBucket>& buckets);

}  // namespace whale::exec

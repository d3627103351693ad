// File: mixed_tp_packing.cpp
// mixed_tp_packing: maps each finest piece of every split parameter into this rank's shard and
// merges the runs of consecutive elements into segments of the flat gradient buffer.
#include "runtime/mixed_tp_packing.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "whale/exec/model/tensor_shard.h"

namespace whale::exec {
namespace {

/// Appends `count` gradients at `flat_offset` to `packed`, extending its last segment when they
/// continue it.
void append(PackedGradients* packed, std::size_t flat_offset, std::size_t count) {
  if (!packed->segments.empty()) {
    GradientSegment& last = packed->segments.back();
    if (last.flat_offset + last.count == flat_offset) {
      last.count += count;
      packed->count += count;
      return;
    }
  }
  packed->segments.push_back({flat_offset, packed->count, count});
  packed->count += count;
}

/// For each element of the full tensor, its index in shard `mine`, or -1 where `mine` does not
/// hold it.
std::vector<int64_t> positions_in_shard(const TensorShard& mine) {
  std::vector<int64_t> position(mine.full_count(), -1);
  const std::vector<std::size_t> held = shard_full_indices(mine);
  for (std::size_t i = 0; i < held.size(); ++i) position[held[i]] = static_cast<int64_t>(i);
  return position;
}

/// Appends piece `piece` (of `pieces`) of parameter `name`, whose shard starts at `flat_offset`
/// with `position` its positions_in_shard, in the piece's element order.
void append_piece(const plan::Model& model, const std::string& name,
                  const std::vector<int64_t>& position, int piece, int pieces,
                  std::size_t flat_offset, PackedGradients* packed) {
  for (std::size_t full : shard_full_indices(parameter_shard(model, name, piece, pieces))) {
    if (position[full] < 0)
      throw std::logic_error("mixed_tp_packing: piece " + std::to_string(piece) + " of " +
                             std::to_string(pieces) + " of " + name + " is not in this shard");
    append(packed, flat_offset + static_cast<std::size_t>(position[full]), 1);
  }
}

}  // namespace

std::vector<std::vector<PackedGradients>> mixed_tp_packing(
    const plan::Model& model, const plan::Stage& stage, const StageRole& role,
    const std::vector<ParameterView>& parameters, const std::vector<plan::GradientBucket>& buckets) {
  const int pieces = stage.tp;
  const int tp = stage.replica_tp(role.replica);
  const int first_piece = role.tp_rank * pieces / tp, end_piece = (role.tp_rank + 1) * pieces / tp;
  std::vector<std::vector<PackedGradients>> packing;
  for (const plan::GradientBucket& bucket : buckets) {
    std::vector<PackedGradients> runs;
    for (int j = first_piece; j < end_piece; ++j) runs.push_back(PackedGradients{j, {}, 0, true});
    runs.push_back(PackedGradients{pieces, {}, 0, role.tp_rank == 0});
    std::size_t flat_offset = 0;
    for (const ParameterView& p : parameters) {
      const std::size_t offset = flat_offset;
      flat_offset += p.count;
      if (p.layer < bucket.first_layer || p.layer >= bucket.end_layer) continue;
      const TensorShard mine = parameter_shard(model, p.name, role.tp_rank, tp);
      if (p.tp_replicated || mine.replicated()) {
        append(&runs.back(), offset, p.count);
        continue;
      }
      const std::vector<int64_t> position = positions_in_shard(mine);  // once for all its pieces
      for (int j = first_piece; j < end_piece; ++j)
        append_piece(model, p.name, position, j, pieces, offset, &runs[j - first_piece]);
    }
    std::vector<PackedGradients> nonempty;
    for (PackedGradients& run : runs)
      if (run.count > 0) nonempty.push_back(std::move(run));
    packing.push_back(std::move(nonempty));
  }
  return packing;
}

}  // namespace whale::exec

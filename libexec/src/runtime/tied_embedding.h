// File: tied_embedding.h
// Private: Megatron's embedding group. When a model's LM head is tied to the token table and the
// embedding and the head lie in different pipeline stages, both stages hold the table (the head
// stage a copy under the same name, initialised alike). Before either optimizer step, the two
// copies' gradients, each already summed over its stage's replicas, are added, so both copies
// take the same steps and stay equal. The two stages may share devices (a wave of an even chunk
// count ends on the first group): a rank then holds both copies and adds them itself.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/stage_module.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// The stages of the token table and of the tied head, {first, head}; empty when the plan's
/// model does not tie them across stages.
std::vector<int> tied_embedding_stages(const plan::Plan& plan);

/// Every rank of the given stages, ascending.
std::vector<int> ranks_of_stages(const plan::Plan& plan, const RankLayout& layout,
                                 const std::vector<int>& stages);

/// One copy of the table on this rank: its stage's, which of the table's elements it holds
/// (the table is vocabulary-parallel: a tensor rank holds a run of rows, `first` the element
/// its run starts at; the whole table, from 0, at tp 1), and the elements [owned_begin,
/// owned_end) of the copy that it puts into the sum, the others adding zeros there, so that
/// each element of each stage's copy counts once: all of them on replica 0 when every
/// replica holds the whole reduced gradient (tied_sum_range), under ZeRO-2 those in the
/// replica's shard.
struct TiedCopy {
  ParameterView table;
  std::size_t first = 0;
  std::size_t owned_begin = 0, owned_end = 0;
};

/// The [owned_begin, owned_end) of a copy: `slice` (StageOptimizer::slice_of the table) under
/// sharded gradients, else the whole `count` on replica 0 and nothing on the others.
std::pair<std::size_t, std::size_t> tied_sum_range(bool shard_gradients, int replica,
                                                   std::size_t count,
                                                   std::pair<std::size_t, std::size_t> slice);

/// The element of the full token table that `tp_rank` of `tp_size` holds first.
std::size_t tied_table_first(const plan::Model& model, int tp_rank, int tp_size);

/// The ranks that `rank`, holding one copy of the tied table, sums its copy's gradient with:
/// where the copies are split alike (plan::Plan::tied_table_copies_split_alike), the ranks
/// holding the same rows (its tp rank in every replica of both stages); otherwise every rank
/// of both stages. Ascending.
std::vector<int> tied_group_ranks(const plan::Plan& plan, const RankLayout& layout, int rank);

class TiedEmbedding {
 public:
  /// `copies`: this rank's one or two copies of a table of `table_count` elements. With one,
  /// `group` holds the ranks of tied_group_ranks (this rank a member), which all hold this
  /// copy's rows when `rows_alike`. With both (the two stages on the same devices), which must
  /// hold the same rows (std::invalid_argument otherwise): `group` null where every replica
  /// holds the whole reduced gradients (the sum is this rank's own), else the stages' data-
  /// parallel group (same replicas, ZeRO-2), over which the owned parts are summed. All must
  /// outlive this.
  TiedEmbedding(Backend& backend, Communicator* group, std::vector<TiedCopy> copies,
                std::size_t table_count, bool rows_alike);

  /// Each copy's gradient = the first stage's gradient + the head stage's, over the rows it
  /// holds. With both copies and no group, added in place; with a group, collective over it
  /// (each member calls it once per step), every copy putting in its owned elements and zeros
  /// elsewhere: both copies added in place, then all-reduced in place; one copy with rows
  /// alike, all-reduced in place; otherwise through a zero-filled fp32 buffer of the whole
  /// table (backend memory, held for the call), each copy's owned elements added into place.
  void sum_gradients();

 private:
  Backend& backend_;
  Communicator* group_;
  std::vector<TiedCopy> copies_;
  std::size_t table_count_;
  bool rows_alike_;
  /// Zeros the copy's gradient outside its owned elements.
  void zero_unowned(const TiedCopy& copy);
};

}  // namespace whale::exec

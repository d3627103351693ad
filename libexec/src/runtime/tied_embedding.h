// File: tied_embedding.h
// Private: Megatron's embedding group. When a model's LM head is tied to the token table and the
// embedding and the head lie in different pipeline stages, both stages hold the table (the head
// stage a copy under the same name, initialised alike). Before either optimizer step, the two
// copies' gradients, each already summed over its stage's replicas, are added, so both copies
// take the same steps and stay equal. The two stages may share devices (a wave of an even chunk
// count ends on the first group): a rank then holds both copies and adds them itself.
#pragma once

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
/// its run starts at; the whole table, from 0, at tp 1), and whether it counts in the sum
/// (replica 0 of its stage, every tensor rank of it adding its own rows: every replica holds
/// the same reduced gradient; the others add zeros).
struct TiedCopy {
  ParameterView table;
  std::size_t first = 0;
  bool representative = false;
};

/// The element of the full token table that `tp_rank` of `tp_size` holds first.
std::size_t tied_table_first(const plan::Model& model, int tp_rank, int tp_size);

class TiedEmbedding {
 public:
  /// `copies`: this rank's one or two copies of a table of `table_count` elements. With one,
  /// `group` holds the ranks of both stages (this rank a member); with both (the two stages on
  /// the same devices, each holding the same reduced gradients), null: the sum is this rank's
  /// own, and the two must hold the same rows (std::invalid_argument otherwise). All must
  /// outlive this.
  TiedEmbedding(Backend& backend, Communicator* group, std::vector<TiedCopy> copies,
                std::size_t table_count);

  /// Each copy's gradient = the first stage's gradient + the head stage's, over the rows it
  /// holds, summed in backend memory (a device buffer on a GPU rank). With a group, collective
  /// over it (the whole table, each representative adding its rows into place): each member
  /// calls it once per step; with both copies, once both stages' gradients are reduced.
  void sum_gradients();

 private:
  Backend& backend_;
  Communicator* group_;
  std::vector<TiedCopy> copies_;
  Tensor sum_;  // fp32: the whole table on its way through the group, or one copy's rows
};

}  // namespace whale::exec

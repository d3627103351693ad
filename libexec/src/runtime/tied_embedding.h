// File: tied_embedding.h
// Private: Megatron's embedding group. When a model's LM head is tied to the token table and the
// embedding and the head lie in different pipeline stages, both stages hold the table (the head
// stage a copy under the same name, initialised alike). Before either optimizer step, the two
// copies' gradients, each already summed over its stage's replicas, are added, so both copies
// take the same steps and stay equal.
#pragma once

#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"
#include "whale/exec/model/stage_module.h"
#include "whale/exec/runtime/rank_layout.h"
#include "whale/plan/plan.h"

namespace whale::exec {

/// The stages of the token table and of the tied head, {first, head}; empty when the plan's
/// model does not tie them across stages. Throws whale::Error naming tie_embeddings when the two
/// stages share devices (interleaved or wave placements).
std::vector<int> tied_embedding_stages(const plan::Plan& plan, const RankLayout& layout);

/// Every rank of the given stages, ascending.
std::vector<int> ranks_of_stages(const plan::Plan& plan, const RankLayout& layout,
                                 const std::vector<int>& stages);

class TiedEmbedding {
 public:
  /// `group`: the ranks of both stages (this rank a member); `table`: this rank's copy;
  /// `representative`: its copy counts in the sum (replica 0, tp rank 0 of its stage: every
  /// replica and tp rank holds the same reduced gradient; the others add zeros). All must
  /// outlive this.
  TiedEmbedding(Backend& backend, Communicator& group, ParameterView table, bool representative);

  /// table.gradient = the first stage's gradient + the head stage's, summed in backend memory
  /// (a device buffer on a GPU rank). Collective over the group: each member calls it once per
  /// step.
  void sum_gradients();

 private:
  Backend& backend_;
  Communicator& group_;
  ParameterView table_;
  bool representative_;
  Tensor sum_;  // fp32, table.count: the gradient on its way through the group
};

}  // namespace whale::exec

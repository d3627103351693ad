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

/// One copy of the table on this rank: its stage's, and whether it counts in the sum (replica
/// 0, tp rank 0 of its stage: every replica and tp rank holds the same reduced gradient; the
/// others add zeros).
struct TiedCopy {
  ParameterView table;
  bool representative = false;
};

class TiedEmbedding {
 public:
  /// `copies`: this rank's one or two copies (of the same count). With one, `group` holds the
  /// ranks of both stages (this rank a member); with both (the two stages on the same devices,
  /// each holding the same reduced gradients), null: the sum is this rank's own. All must
  /// outlive this.
  TiedEmbedding(Backend& backend, Communicator* group, std::vector<TiedCopy> copies);

  /// Each copy's gradient = the first stage's gradient + the head stage's, summed in backend
  /// memory (a device buffer on a GPU rank). With a group, collective over it: each member
  /// calls it once per step; with both copies, once both stages' gradients are reduced.
  void sum_gradients();

 private:
  Backend& backend_;
  Communicator* group_;
  std::vector<TiedCopy> copies_;
  Tensor sum_;  // fp32, the table's count: the gradient on its way through the group
};

}  // namespace whale::exec

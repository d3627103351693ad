// File: tied_embedding.cpp
// The tied token table's stages and ranks, and the sum of its two copies' gradients.
#include "runtime/tied_embedding.h"

#include "whale/exec/model/tensor_shard.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace whale::exec {

std::vector<int> tied_embedding_stages(const plan::Plan& plan) {
  if (!ties_token_table(plan.model)) return {};
  const int head_layer = static_cast<int>(plan.model.layers.size()) - 1;
  int first = -1, head = -1;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    if (plan.stages[s].first_layer == 0) first = s;
    if (plan.stages[s].end_layer == head_layer + 1) head = s;
  }
  if (first < 0 || head < 0 || first == head) return {};
  return {first, head};
}

std::vector<int> ranks_of_stages(const plan::Plan& plan, const RankLayout& layout,
                                 const std::vector<int>& stages) {
  std::vector<int> ranks;
  for (int s : stages)
    for (int r = 0; r < plan.stages[s].dp(); ++r)
      for (int rank : layout.tp_group(s, r)) ranks.push_back(rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::size_t tied_table_first(const plan::Model& model, int tp_rank, int tp_size) {
  const TensorShard layout = parameter_shard(model, kTokenTable, tp_rank, tp_size);
  return layout.replicated() ? 0 : layout.ranges.front().first * layout.cols;
}

TiedEmbedding::TiedEmbedding(Backend& backend, Communicator* group, std::vector<TiedCopy> copies,
                             std::size_t table_count)
    : backend_(backend), group_(group), copies_(std::move(copies)) {
  if (copies_.empty() || copies_.size() > 2 || (copies_.size() == 2) != (group_ == nullptr))
    throw std::logic_error("TiedEmbedding: one copy with a group, or both without one");
  for (const TiedCopy& c : copies_)
    if (c.first + c.table.count > table_count)
      throw std::logic_error("TiedEmbedding: a copy's rows lie outside the token table");
  if (copies_.size() == 2 &&
      (copies_[0].first != copies_[1].first || copies_[0].table.count != copies_[1].table.count))
    throw std::invalid_argument(
        "a tied token table whose embedding and LM head stages share devices at different "
        "tensor-parallel degrees: give the two stages the same tp");
  sum_ = Tensor(backend, group_ ? table_count : copies_[0].table.count, DType::fp32);
}

void TiedEmbedding::sum_gradients() {
  if (!group_) {  // both copies here, the same rows: the sum is local
    backend_.add_forward(sum_, copies_[0].table.gradient, copies_[1].table.gradient, sum_.count());
    for (const TiedCopy& c : copies_) backend_.copy(c.table.gradient, sum_, Stream::compute);
    return;
  }
  const TiedCopy& mine = copies_[0];
  const TensorView rows = sum_.slice(mine.first, mine.table.count);
  backend_.fill_zero(sum_, Stream::compute);
  if (mine.representative) backend_.copy(rows, mine.table.gradient, Stream::compute);
  group_->all_reduce_sum(sum_.view().as<float>(), sum_.count());
  backend_.copy(mine.table.gradient, rows, Stream::compute);
}

}  // namespace whale::exec

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

std::vector<int> tied_group_ranks(const plan::Plan& plan, const RankLayout& layout, int rank) {
  const std::vector<int> stages = tied_embedding_stages(plan);
  if (!plan.tied_table_copies_split_alike()) return ranks_of_stages(plan, layout, stages);
  int piece = -1;
  for (const StageRole& role : layout.roles(rank))
    if (std::count(stages.begin(), stages.end(), role.stage) > 0) piece = role.tp_rank;
  if (piece < 0) throw std::logic_error("tied_group_ranks: the rank holds no copy of the table");
  std::vector<int> ranks;
  for (int s : stages)
    for (int r = 0; r < plan.stages[s].dp(); ++r) ranks.push_back(layout.tp_group(s, r).at(piece));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::pair<std::size_t, std::size_t> tied_sum_range(bool shard_gradients, int replica,
                                                   std::size_t count,
                                                   std::pair<std::size_t, std::size_t> slice) {
  if (shard_gradients) return slice;
  return {0, replica == 0 ? count : 0};
}

TiedEmbedding::TiedEmbedding(Backend& backend, Communicator* group, std::vector<TiedCopy> copies,
                             std::size_t table_count, bool rows_alike)
    : backend_(backend), group_(group), copies_(std::move(copies)), table_count_(table_count),
      rows_alike_(rows_alike) {
  if (copies_.empty() || copies_.size() > 2 || (copies_.size() == 1 && group_ == nullptr))
    throw std::logic_error("TiedEmbedding: one copy with a group, or both");
  for (const TiedCopy& c : copies_)
    if (c.first + c.table.count > table_count || c.owned_begin > c.owned_end ||
        c.owned_end > c.table.count)
      throw std::logic_error("TiedEmbedding: a copy's rows lie outside the token table");
  if (copies_.size() == 2 &&
      (copies_[0].first != copies_[1].first || copies_[0].table.count != copies_[1].table.count))
    throw std::invalid_argument(
        "a tied token table whose embedding and LM head stages share devices at different "
        "tensor-parallel degrees: give the two stages the same tp");
}

void TiedEmbedding::zero_unowned(const TiedCopy& copy) {
  const TensorView g = copy.table.gradient;
  if (copy.owned_begin > 0) backend_.fill_zero(g.slice(0, copy.owned_begin), Stream::compute);
  if (copy.owned_end < g.count)
    backend_.fill_zero(g.slice(copy.owned_end, g.count - copy.owned_end), Stream::compute);
}

void TiedEmbedding::sum_gradients() {
  if (copies_.size() == 2) {  // both copies here, the same rows
    if (group_)
      for (const TiedCopy& c : copies_) zero_unowned(c);
    const TensorView first = copies_[0].table.gradient, head = copies_[1].table.gradient;
    backend_.add_forward(first, first, head, first.count);
    if (group_) group_->all_reduce_sum(first.as<float>(), first.count);
    backend_.copy(head, first, Stream::compute);
    return;
  }
  const TiedCopy& mine = copies_[0];
  if (rows_alike_) {  // every member holds these rows: the owned parts summed in place
    zero_unowned(mine);
    group_->all_reduce_sum(mine.table.gradient.as<float>(), mine.table.count);
    return;
  }
  Tensor sum(backend_, table_count_, DType::fp32);  // zero-filled
  const TensorView rows = sum.slice(mine.first, mine.table.count);
  const std::size_t owned = mine.owned_end - mine.owned_begin;
  if (owned > 0)
    backend_.copy(rows.slice(mine.owned_begin, owned), mine.table.gradient.slice(mine.owned_begin, owned),
                  Stream::compute);
  group_->all_reduce_sum(sum.view().as<float>(), sum.count());
  backend_.copy(mine.table.gradient, rows, Stream::compute);
}

}  // namespace whale::exec

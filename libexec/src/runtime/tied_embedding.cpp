// File: tied_embedding.cpp
// The tied token table's stages and ranks, and the sum of its two copies' gradients.
#include "runtime/tied_embedding.h"

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

TiedEmbedding::TiedEmbedding(Backend& backend, Communicator* group, std::vector<TiedCopy> copies)
    : backend_(backend), group_(group), copies_(std::move(copies)),
      sum_(backend, copies_.at(0).table.count, DType::fp32) {
  if (copies_.size() > 2 || (copies_.size() == 2) != (group_ == nullptr))
    throw std::logic_error("TiedEmbedding: one copy with a group, or both without one");
  for (const TiedCopy& c : copies_)
    if (c.table.count != sum_.count())
      throw std::logic_error("TiedEmbedding: copies of the token table differ in size");
}

void TiedEmbedding::sum_gradients() {
  if (!group_) {  // both copies here: the sum is local
    backend_.add_forward(sum_, copies_[0].table.gradient, copies_[1].table.gradient, sum_.count());
  } else if (copies_[0].representative) {
    backend_.copy(sum_, copies_[0].table.gradient, Stream::compute);
  } else {
    backend_.fill_zero(sum_, Stream::compute);
  }
  if (group_) group_->all_reduce_sum(sum_.view().as<float>(), sum_.count());
  for (const TiedCopy& c : copies_) backend_.copy(c.table.gradient, sum_, Stream::compute);
}

}  // namespace whale::exec

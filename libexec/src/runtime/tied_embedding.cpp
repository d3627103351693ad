// File: tied_embedding.cpp
// The tied token table's stages and ranks, and the sum of its two copies' gradients.
#include "runtime/tied_embedding.h"

#include <algorithm>
#include <string>

#include "whale/plan/error.h"

namespace whale::exec {

std::vector<int> tied_embedding_stages(const plan::Plan& plan, const RankLayout& layout) {
  if (!ties_token_table(plan.model)) return {};
  const int head_layer = static_cast<int>(plan.model.layers.size()) - 1;
  int first = -1, head = -1;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    if (plan.stages[s].first_layer == 0) first = s;
    if (plan.stages[s].end_layer == head_layer + 1) head = s;
  }
  if (first < 0 || head < 0 || first == head) return {};
  std::vector<int> a = ranks_of_stages(plan, layout, {first}), b = ranks_of_stages(plan, layout, {head});
  std::vector<int> shared;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(shared));
  if (!shared.empty())
    throw Error(plan.model.source_file, "tie_embeddings",
                "the embedding's stage " + std::to_string(first) + " and the tied head's stage " +
                    std::to_string(head) + " on different devices, got rank " +
                    std::to_string(shared.front()) + " in both",
                "set tie_embeddings: false for interleaved or wave placements");
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

TiedEmbedding::TiedEmbedding(Backend& backend, Communicator& group, ParameterView table,
                             bool representative)
    : backend_(backend), group_(group), table_(table), representative_(representative),
      sum_(backend, table.count, DType::fp32) {}

void TiedEmbedding::sum_gradients() {
  if (representative_)
    backend_.copy(sum_, table_.gradient, Stream::compute);
  else
    backend_.fill_zero(sum_, Stream::compute);
  group_.all_reduce_sum(sum_.view().as<float>(), sum_.count());
  backend_.copy(table_.gradient, sum_, Stream::compute);
}

}  // namespace whale::exec

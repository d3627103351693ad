// File: gradient_reducer.cpp
// GradientReducer: maps buckets (layer ranges) to ranges of the flat gradient buffer, starts
// their all-reduces (or ZeRO-2 reduce-scatters, or a mixed-tp stage's packed all-reduces) in
// bucket order and completes them.
#include "runtime/gradient_reducer.h"

#include "runtime/zero_shard.h"

#include <stdexcept>
#include <string>

namespace whale::exec {

GradientReducer::GradientReducer(const std::vector<ParameterView>& parameters,
                                 std::vector<plan::GradientBucket> buckets, Communicator* dp,
                                 bool shard_gradients, Communicator* expert_dp)
    : buckets_(std::move(buckets)), dp_(dp) {
  const std::size_t n = buckets_.size();
  begin_.assign(n, nullptr);
  count_.assign(n, 0);
  requests_.resize(n);
  done_.assign(n, false);
  started_.resize(n);
  completed_.resize(n);
  float* next = parameters.empty() ? nullptr : parameters.front().gradient.as<float>();
  // Separate expert groups: each kind's elements in the concatenation of that kind's
  // parameters alone (StageOptimizer's two flat ranges), which ZeRO-2 shards.
  std::size_t kind_total[2] = {0, 0};  // [expert_parallel]
  for (const ParameterView& p : parameters) {
    float* gradient = p.gradient.as<float>();
    if (p.gradient.dtype != DType::fp32 || gradient != next)
      throw std::logic_error("GradientReducer: the gradient of " + p.name +
                             " is not the fp32 continuation of the flat gradient tensor");
    next += p.count;
    for (std::size_t b = 0; b < n; ++b) {
      if (p.layer < buckets_[b].first_layer || p.layer >= buckets_[b].end_layer) continue;
      if (!begin_[b]) begin_[b] = gradient;
      if (begin_[b] + count_[b] != gradient)
        throw std::logic_error("GradientReducer: bucket " + std::to_string(b) +
                               " is not one range of the flat gradient buffer");
      count_[b] += p.count;
      if (expert_dp == dp) continue;
      runs_.resize(n);
      Communicator* group = p.expert_parallel ? expert_dp : dp;
      if (!runs_[b].empty() && runs_[b].back().group == group &&
          runs_[b].back().expert == p.expert_parallel &&
          runs_[b].back().begin + runs_[b].back().count == gradient)
        runs_[b].back().count += p.count;
      else
        runs_[b].push_back({gradient, p.count, group, p.expert_parallel, kind_total[p.expert_parallel], {}});
    }
    kind_total[p.expert_parallel] += p.count;
  }
  if (!shard_gradients) return;
  if (!runs_.empty()) {  // each run reduce-scattered over its group, in its kind's shards
    for (std::vector<Run>& bucket : runs_)
      for (Run& run : bucket)
        if (run.group)
          run.blocks = zero_block_counts(kind_total[run.expert], run.group->size(),
                                         run.kind_offset, run.count);
    return;
  }
  const float* flat = parameters.empty() ? nullptr : parameters.front().gradient.as<float>();
  const std::size_t total = static_cast<std::size_t>(next - flat);
  for (std::size_t b = 0; b < n; ++b)
    blocks_.push_back(zero_block_counts(total, dp_->size(),
                                        begin_[b] ? static_cast<std::size_t>(begin_[b] - flat) : 0,
                                        count_[b]));
}

GradientReducer::GradientReducer(Backend& backend, const std::vector<ParameterView>& parameters,
                                 std::vector<plan::GradientBucket> buckets,
                                 std::vector<std::vector<PackedGradients>> packing,
                                 std::vector<Communicator*> groups)
    : buckets_(std::move(buckets)), dp_(nullptr), backend_(&backend),
      packing_(std::move(packing)), pack_groups_(std::move(groups)) {
  const std::size_t n = buckets_.size();
  if (packing_.size() != n)
    throw std::logic_error("GradientReducer: " + std::to_string(packing_.size()) +
                           " packings for " + std::to_string(n) + " buckets");
  requests_.resize(n);
  done_.assign(n, false);
  started_.resize(n);
  completed_.resize(n);
  std::size_t total = 0;
  for (const ParameterView& p : parameters) {
    if (p.gradient.dtype != DType::fp32 ||
        p.gradient.data != parameters.front().gradient.as<float>() + total)
      throw std::logic_error("GradientReducer: the gradient of " + p.name +
                             " is not the fp32 continuation of the flat gradient tensor");
    total += p.count;
  }
  if (!parameters.empty()) flat_ = TensorView{parameters.front().gradient.data, total, DType::fp32};
  packs_.resize(n);
  for (std::size_t b = 0; b < n; ++b)
    for (const PackedGradients& pack : packing_[b])
      if (pack.group < 0 || pack.group >= static_cast<int>(pack_groups_.size()) ||
          !pack_groups_[pack.group])
        throw std::logic_error("GradientReducer: no group " + std::to_string(pack.group));
}

// A bucket's packs live from its start to its completion only: held for the whole run they
// would add every gradient of the stage once more, in fp32, to the rank's memory (beyond what
// whale-sim counts and what the CUDA backend's arena is sized by).
void GradientReducer::start_packed(int b) {
  packs_[b].clear();
  for (std::size_t i = 0; i < packing_[b].size(); ++i) {
    const PackedGradients& pack = packing_[b][i];
    Tensor& buffer = packs_[b].emplace_back(*backend_, pack.count, DType::fp32);  // zero-filled
    if (pack.contributes) {
      for (const GradientSegment& g : pack.segments)
        backend_->copy(buffer.slice(g.pack_offset, g.count), flat_.slice(g.flat_offset, g.count),
                       Stream::compute);
    }
    requests_[b].push_back(
        pack_groups_[pack.group]->start_all_reduce_sum(buffer.view().as<float>(), pack.count));
  }
}

void GradientReducer::complete(int b) {
  done_[b] = true;
  completed_[b] = Clock::now();
  if (packing_.empty()) return;
  for (std::size_t i = 0; i < packing_[b].size(); ++i)
    for (const GradientSegment& g : packing_[b][i].segments)
      backend_->copy(flat_.slice(g.flat_offset, g.count), packs_[b][i].slice(g.pack_offset, g.count),
                     Stream::compute);
  packs_[b].clear();  // queued copies finish before the memory's next user starts (CudaBackend::release)
}

void GradientReducer::start_through(int b) {
  if (next_ > b || next_ >= buckets()) return;
  for (; next_ <= b && next_ < buckets(); ++next_) {
    started_[next_] = Clock::now();
    done_[next_] = false;
    std::vector<std::unique_ptr<CommRequest>>& requests = requests_[next_];
    if (!packing_.empty()) {
      start_packed(next_);
    } else if (!runs_.empty()) {
      for (const Run& run : runs_[next_]) {
        if (!run.group) continue;
        requests.push_back(run.blocks.empty()
                               ? run.group->start_all_reduce_sum(run.begin, run.count)
                               : run.group->start_reduce_scatter_sum(run.begin, run.blocks));
      }
    } else {
      requests.push_back(blocks_.empty()
                             ? dp_->start_all_reduce_sum(begin_[next_], count_[next_])
                             : dp_->start_reduce_scatter_sum(begin_[next_], blocks_[next_]));
    }
  }
}

void GradientReducer::layer_done(int layer) {
  int last_ready = next_ - 1;
  while (last_ready + 1 < buckets() && buckets_[last_ready + 1].first_layer >= layer) ++last_ready;
  start_through(last_ready);
  progress();
}

void GradientReducer::progress() {
  for (int b = 0; b < next_; ++b) {
    if (done_[b]) continue;
    bool complete = true;
    for (auto& request : requests_[b]) complete = request->test() && complete;
    if (complete) this->complete(b);
  }
}

void GradientReducer::wait_all() {
  if (next_ != buckets())
    throw std::logic_error("GradientReducer: waiting with bucket " + std::to_string(next_) +
                           " of " + std::to_string(buckets()) + " never started");
  for (int b = 0; b < buckets(); ++b) {
    if (!done_[b]) {
      for (auto& request : requests_[b]) request->wait();
      complete(b);
    }
    requests_[b].clear();
  }
  next_ = 0;  // ready for the next step
}

}  // namespace whale::exec

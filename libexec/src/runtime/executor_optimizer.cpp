// File: executor_optimizer.cpp
// StageOptimizer: AdamW (adamw.h) on the whole flattened parameters or, under ZeRO-1/2, on this
// member's shard of them followed by an all-gather.
#include "runtime/executor_optimizer.h"

#include <algorithm>
#include <stdexcept>

namespace whale::exec {

StageOptimizer::StageOptimizer(Backend& backend, std::vector<ParameterView> parameters,
                               Communicator* dp, bool shard, const AdamWConfig& config)
    : parameters_(std::move(parameters)),
      dp_(dp),
      shard_(shard && dp != nullptr),
      config_(config),
      backend_(backend) {
  for (const ParameterView& p : parameters_) total_ += p.count;
  slice_ = shard_ ? zero_shard(total_, dp_->size(), dp_->rank()) : zero_shard(total_, 1, 0);
  adamw_ = std::make_unique<AdamW>(backend_, parameters_, slice_.begin, slice_.end);
}

StageOptimizer::~StageOptimizer() = default;

template <class Visit>
void StageOptimizer::for_each_slice(std::size_t begin, std::size_t count, Visit visit) const {
  std::size_t offset = 0;  // flat index of the current parameter's first element
  for (const ParameterView& p : parameters_) {
    const std::size_t lo = std::max(begin, offset), hi = std::min(begin + count, offset + p.count);
    if (lo < hi) visit(p.value.slice(lo - offset, hi - lo), lo - begin);
    offset += p.count;
  }
}

void StageOptimizer::gather(std::size_t begin, std::size_t count, float* flat) const {
  for_each_slice(begin, count, [&](TensorView slice, std::size_t at) {
    backend_.download(flat + at, slice, Stream::compute);
  });
  backend_.synchronize(Stream::compute);
}

void StageOptimizer::scatter(std::size_t begin, std::size_t count, const float* flat) {
  for_each_slice(begin, count, [&](TensorView slice, std::size_t at) {
    backend_.upload(slice, flat + at, Stream::compute);
  });
  backend_.synchronize(Stream::compute);
}

void StageOptimizer::step() { adamw_->step(config_); }

void StageOptimizer::share_parameters() {
  if (!shard_) return;
  const std::size_t members = static_cast<std::size_t>(dp_->size());
  reuse_or_allocate(mine_, backend_, slice_.size, DType::fp32);
  reuse_or_allocate(flat_, backend_, slice_.size * members, DType::fp32);
  if (slice_.count() < slice_.size)  // the last shards' padding
    backend_.fill_zero(mine_.slice(slice_.count(), slice_.size - slice_.count()), Stream::compute);
  for_each_slice(slice_.begin, slice_.count(), [&](TensorView slice, std::size_t at) {
    backend_.copy(mine_.slice(at, slice.count), slice, Stream::compute);
  });
  dp_->all_gather(mine_.view().as<float>(), flat_.view().as<float>(), slice_.size);
  for_each_slice(0, total_, [&](TensorView slice, std::size_t at) {
    backend_.copy(slice, flat_.slice(at, slice.count), Stream::compute);
  });
}

std::vector<float> StageOptimizer::save_state() const {
  const std::size_t moments = adamw_->state_count();
  std::vector<float> state(total_ + 2 * moments + 1);
  gather(0, total_, state.data());
  backend_.download(state.data() + total_, adamw_->first_moment(), Stream::compute);
  backend_.download(state.data() + total_ + moments, adamw_->second_moment(), Stream::compute);
  backend_.synchronize(Stream::compute);
  state.back() = static_cast<float>(adamw_->step_count());  // exact below 2^24 steps
  return state;
}

std::size_t StageOptimizer::load_state(const std::vector<float>& state, std::size_t offset) {
  const std::size_t moments = adamw_->state_count();
  const std::size_t needed = total_ + 2 * moments + 1;
  if (offset + needed > state.size())
    throw std::invalid_argument("optimizer state: expected " + std::to_string(needed) +
                                " more floats, " + std::to_string(state.size() - offset) +
                                " remain");
  const float* at = state.data() + offset;
  scatter(0, total_, at);
  backend_.upload(adamw_->first_moment(), at + total_, Stream::compute);
  backend_.upload(adamw_->second_moment(), at + total_ + moments, Stream::compute);
  backend_.synchronize(Stream::compute);
  adamw_->set_step_count(static_cast<int>(at[needed - 1]));
  return needed;
}

}  // namespace whale::exec

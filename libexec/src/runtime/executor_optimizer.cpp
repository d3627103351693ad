// File: executor_optimizer.cpp
// StageOptimizer: dp gradient reduction (all-reduce, or reduce-scatter for ZeRO-1) and AdamW
// (adamw.h) on the whole flattened parameters or on this member's shard of them.
#include "runtime/executor_optimizer.h"

#include <algorithm>
#include <stdexcept>


namespace whale::exec {
namespace {

/// The first gradient when the parameters' gradients lie back to back in one buffer (a stage
/// module's flat gradient buffer), so that the all-reduce needs no copy; else null.
float* contiguous_gradients(const std::vector<ParameterView>& parameters) {
  if (parameters.empty()) return nullptr;
  float* next = parameters.front().gradient.as<float>();
  for (const ParameterView& p : parameters) {
    if (p.gradient.as<float>() != next) return nullptr;
    next += p.count;
  }
  return parameters.front().gradient.as<float>();
}

}  // namespace

StageOptimizer::StageOptimizer(Backend& backend, std::vector<ParameterView> parameters,
                               Communicator* dp, bool shard, const AdamWConfig& config)
    : parameters_(std::move(parameters)),
      dp_(dp),
      shard_(shard && dp != nullptr),
      config_(config),
      backend_(backend) {
  for (const ParameterView& p : parameters_) total_ += p.count;
  const std::size_t members = shard_ ? static_cast<std::size_t>(dp_->size()) : 1;
  shard_size_ = (total_ + members - 1) / members;
  shard_begin_ = shard_ ? std::min(total_, shard_size_ * static_cast<std::size_t>(dp_->rank())) : 0;
  adamw_ = std::make_unique<AdamW>(backend_, parameters_, shard_begin_, shard_begin_ + shard_size_);
  contiguous_gradients_ = contiguous_gradients(parameters_);
}

StageOptimizer::~StageOptimizer() = default;

void StageOptimizer::gather(Field field, std::size_t begin, std::size_t count, float* flat) const {
  std::size_t offset = 0;  // flat index of the current parameter's first element
  for (const ParameterView& p : parameters_) {
    const std::size_t lo = std::max(begin, offset), hi = std::min(begin + count, offset + p.count);
    const TensorView source = field == Field::value ? p.value : p.gradient;
    if (lo < hi)
      backend_.download(flat + (lo - begin), source.slice(lo - offset, hi - lo), Stream::compute);
    offset += p.count;
  }
  backend_.synchronize(Stream::compute);
}

void StageOptimizer::scatter(Field field, std::size_t begin, std::size_t count,
                             const float* flat) {
  std::size_t offset = 0;
  for (const ParameterView& p : parameters_) {
    const std::size_t lo = std::max(begin, offset), hi = std::min(begin + count, offset + p.count);
    const TensorView target = field == Field::value ? p.value : p.gradient;
    if (lo < hi)
      backend_.upload(target.slice(lo - offset, hi - lo), flat + (lo - begin), Stream::compute);
    offset += p.count;
  }
  backend_.synchronize(Stream::compute);
}

void StageOptimizer::reduce_gradients() {
  if (!dp_) return;
  if (!shard_ && contiguous_gradients_) {  // the usual case: one flat buffer, reduced in place
    dp_->all_reduce_sum(contiguous_gradients_, total_);
    return;
  }
  const std::size_t padded = shard_ ? shard_size_ * dp_->size() : total_;
  flat_.assign(padded, 0.0f);  // zero padding past total_; capacity is kept across steps
  gather(Field::gradient, 0, total_, flat_.data());
  if (!shard_) {
    dp_->all_reduce_sum(flat_.data(), total_);
    scatter(Field::gradient, 0, total_, flat_.data());
    return;
  }
  // Only this member's shard of the gradient is summed; the rest stays partial and unused.
  mine_.assign(shard_size_, 0.0f);
  dp_->reduce_scatter_sum(flat_.data(), mine_.data(), shard_size_);
  scatter(Field::gradient, shard_begin_, std::min(shard_size_, total_ - shard_begin_), mine_.data());
}

void StageOptimizer::step() {
  adamw_->step(config_);
  if (!shard_) return;
  mine_.assign(shard_size_, 0.0f);
  flat_.resize(shard_size_ * dp_->size());
  gather(Field::value, shard_begin_, std::min(shard_size_, total_ - shard_begin_), mine_.data());
  dp_->all_gather(mine_.data(), flat_.data(), shard_size_);
  scatter(Field::value, 0, total_, flat_.data());
}

std::vector<float> StageOptimizer::save_state() const {
  const std::size_t moments = adamw_->state_count();
  std::vector<float> state(total_ + 2 * moments + 1);
  gather(Field::value, 0, total_, state.data());
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
  scatter(Field::value, 0, total_, at);
  backend_.upload(adamw_->first_moment(), at + total_, Stream::compute);
  backend_.upload(adamw_->second_moment(), at + total_ + moments, Stream::compute);
  backend_.synchronize(Stream::compute);
  adamw_->set_step_count(static_cast<int>(at[needed - 1]));
  return needed;
}

}  // namespace whale::exec

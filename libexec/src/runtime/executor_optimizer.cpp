// File: executor_optimizer.cpp
// StageOptimizer: the model's optimizer (optimizer.h) on the whole flattened parameters or, under ZeRO-1/2, on this
// member's shard of them followed by an all-gather (into the dead gradient buffer); with a separate expert layout, the routed
// experts' parameters as a second range over their own group.
#include "runtime/executor_optimizer.h"

#include <algorithm>
#include <stdexcept>

namespace whale::exec {

StageOptimizer::StageOptimizer(Backend& backend, std::vector<ParameterView> parameters,
                               Communicator* dp, bool shard, const OptimizerConfig& config,
                               bool separate_experts, Communicator* expert_dp)
    : config_(config), backend_(backend) {
  if (!separate_experts) {
    add_range(std::move(parameters), dp, shard);
    return;
  }
  std::vector<ParameterView> dense, experts;
  for (ParameterView& p : parameters) (p.expert_parallel ? experts : dense).push_back(p);
  add_range(std::move(dense), dp, shard);
  if (!experts.empty()) add_range(std::move(experts), expert_dp, shard);  // a stage of MoE blocks
}

StageOptimizer::~StageOptimizer() = default;

void StageOptimizer::add_range(std::vector<ParameterView> parameters, Communicator* group,
                               bool shard) {
  Range& r = ranges_.emplace_back();
  r.parameters = std::move(parameters);
  r.group = group;
  r.shard = shard && group != nullptr;
  for (const ParameterView& p : r.parameters) r.total += p.count;
  r.slice = r.shard ? zero_shard(r.total, group->size(), group->rank()) : zero_shard(r.total, 1, 0);
  r.optimizer = make_optimizer(backend_, r.parameters, config_, r.slice.begin, r.slice.end);
}

std::pair<std::size_t, std::size_t> StageOptimizer::slice_of(const ParameterView& parameter) const {
  for (const Range& r : ranges_) {
    std::size_t offset = 0;  // flat index of the parameter's first element
    for (const ParameterView& p : r.parameters) {
      if (p.name == parameter.name) {
        const std::size_t lo = std::clamp(r.slice.begin, offset, offset + p.count);
        const std::size_t hi = std::clamp(r.slice.end, lo, offset + p.count);
        return {lo - offset, hi - offset};
      }
      offset += p.count;
    }
  }
  throw std::logic_error("StageOptimizer::slice_of: no parameter " + parameter.name);
}

bool StageOptimizer::sharded() const {
  return std::any_of(ranges_.begin(), ranges_.end(), [](const Range& r) { return r.shard; });
}

template <class Visit>
void StageOptimizer::for_each_slice(const Range& range, std::size_t begin, std::size_t count,
                                    Visit visit) {
  std::size_t offset = 0;  // flat index of the current parameter's first element
  for (const ParameterView& p : range.parameters) {
    const std::size_t lo = std::max(begin, offset), hi = std::min(begin + count, offset + p.count);
    if (lo < hi) visit(p.value.slice(lo - offset, hi - lo), lo - begin);
    offset += p.count;
  }
}

void StageOptimizer::step() {
  for (Range& r : ranges_) r.optimizer->step();
}

double StageOptimizer::gradient_square_sum(const std::function<bool(const ParameterView&)>& counted,
                                           const std::function<bool(const ParameterView&)>& copy_counted) const {
  std::vector<ConstTensorView> gradients;
  for (const Range& r : ranges_)  // what each range's optimizer updates: the slice, or everything
    for (const SlicedOptimizer::Run& run : r.optimizer->runs())
      if (counted(*run.parameter) && (r.shard || copy_counted(*run.parameter))) gradients.push_back(run.gradient);
  return backend_.sum_of_squares(gradients);
}

void StageOptimizer::share_parameters() {
  for (Range& r : ranges_)
    if (r.shard) share_range(r);
}

float* StageOptimizer::contiguous_gradients(const Range& r) {
  if (r.parameters.empty()) return nullptr;
  float* const first = r.parameters.front().gradient.as<float>();
  std::size_t offset = 0;
  for (const ParameterView& p : r.parameters) {
    if (p.gradient.dtype != DType::fp32 || p.gradient.as<float>() != first + offset) return nullptr;
    offset += p.count;
  }
  return first;
}

void StageOptimizer::share_range(Range& r) {
  const std::size_t members = static_cast<std::size_t>(r.group->size());
  const std::size_t shard = r.slice.size;
  // The range's gradients are dead from the optimizer step to the next step's zero_gradients,
  // and their buffer holds total >= members * floor(total / members) floats: the first
  // floor(total / members) floats of every shard are gathered there, in place, and the rest (at
  // most one float a shard, as shard = ceil(total / members)) through a members-float scratch.
  // So sharing adds no buffer of the parameters' size, as Megatron-LM's distributed optimizer
  // all-gathers into its contiguous parameter buffer. Gradients not back to back (a range of a
  // separate expert layout): one round through a scratch of members * shard floats.
  float* const gradients = contiguous_gradients(r);
  const std::size_t in_place = gradients ? r.total / members : 0;
  if (in_place > 0) gather_round(r, gradients, 0, in_place);
  if (in_place < shard) {
    reuse_or_allocate(r.scratch, backend_, (shard - in_place) * members, DType::fp32);
    gather_round(r, r.scratch.view().as<float>(), in_place, shard - in_place);
  }
}

void StageOptimizer::gather_round(Range& r, float* out, std::size_t offset, std::size_t count) {
  const int members = r.group->size(), rank = r.group->rank();
  // Floats of `shard` at [offset, offset + count) that hold elements (the last shards are short).
  const auto held = [&](const ZeroShard& shard) {
    return std::min(count, shard.count() > offset ? shard.count() - offset : std::size_t{0});
  };
  const TensorView mine{out + static_cast<std::size_t>(rank) * count, count, DType::fp32};
  const std::size_t own = held(r.slice);
  for_each_slice(r, r.slice.begin + offset, own, [&](TensorView slice, std::size_t at) {
    backend_.copy(mine.slice(at, slice.count), slice, Stream::compute);
  });
  if (own < count) backend_.fill_zero(mine.slice(own, count - own), Stream::compute);
  r.group->all_gather(mine.as<float>(), out, count);
  for (int m = 0; m < members; ++m) {
    const ZeroShard shard = zero_shard(r.total, members, m);
    const TensorView block{out + static_cast<std::size_t>(m) * count, count, DType::fp32};
    for_each_slice(r, shard.begin + offset, held(shard), [&](TensorView slice, std::size_t at) {
      backend_.copy(slice, block.slice(at, slice.count), Stream::compute);
    });
  }
}

std::vector<float> StageOptimizer::save_state() const {
  std::vector<float> state;
  for (const Range& r : ranges_) {
    const std::vector<TensorView> buffers = r.optimizer->state();
    const std::size_t at = state.size(), each = r.optimizer->state_count();
    state.resize(at + r.total + buffers.size() * each);
    float* out = state.data() + at;
    for_each_slice(r, 0, r.total, [&](TensorView slice, std::size_t offset) {
      backend_.download(out + offset, slice, Stream::compute);
    });
    for (std::size_t b = 0; b < buffers.size(); ++b)
      backend_.download(out + r.total + b * each, buffers[b], Stream::compute);
    backend_.synchronize(Stream::compute);
  }
  // Every range steps together: one count, exact below 2^24 steps.
  state.push_back(static_cast<float>(ranges_.front().optimizer->step_count()));
  return state;
}

std::size_t StageOptimizer::load_state(const std::vector<float>& state, std::size_t offset) {
  std::size_t needed = 1;
  for (const Range& r : ranges_) needed += r.total + r.optimizer->state().size() * r.optimizer->state_count();
  if (offset + needed > state.size())
    throw std::invalid_argument("optimizer state: expected " + std::to_string(needed) +
                                " more floats, " + std::to_string(state.size() - offset) +
                                " remain");
  const float* at = state.data() + offset;
  const int steps = static_cast<int>(at[needed - 1]);
  for (Range& r : ranges_) {
    const std::vector<TensorView> buffers = r.optimizer->state();
    const std::size_t each = r.optimizer->state_count();
    for_each_slice(r, 0, r.total, [&](TensorView slice, std::size_t o) {
      backend_.upload(slice, at + o, Stream::compute);
    });
    for (std::size_t b = 0; b < buffers.size(); ++b)
      backend_.upload(buffers[b], at + r.total + b * each, Stream::compute);
    backend_.synchronize(Stream::compute);
    r.optimizer->set_step_count(steps);
    at += r.total + buffers.size() * each;
  }
  return needed;
}

}  // namespace whale::exec

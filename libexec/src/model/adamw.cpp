// File: adamw.cpp
// AdamW::step: walks the parameters that overlap the slice and hands the backend every
// overlapping run, with the matching part of the moment buffers, as one batch.
#include "whale/exec/model/adamw.h"

#include <algorithm>

namespace whale::exec {

AdamW::AdamW(Backend& backend, std::vector<ParameterView> params, std::size_t begin,
             std::size_t end)
    : backend_(backend), params_(std::move(params)) {
  for (const ParameterView& p : params_) total_ += p.count;
  end_ = std::min(end, total_);
  begin_ = std::min(begin, end_);
  m_ = Tensor(backend_, end_ - begin_, DType::fp32);
  v_ = Tensor(backend_, end_ - begin_, DType::fp32);
}

void AdamW::step(const AdamWConfig& c) {
  ++step_;
  std::vector<Backend::AdamwSegment> segments;
  segments.reserve(params_.size());
  std::size_t offset = 0;  // of the current parameter in the concatenation
  for (const ParameterView& p : params_) {
    const std::size_t lo = std::max(begin_, offset), hi = std::min(end_, offset + p.count);
    if (lo < hi && p.trained) {  // untrained state keeps its value (and zero moments)
      const std::size_t in_param = lo - offset, in_state = lo - begin_;
      segments.push_back({p.value.slice(in_param, hi - lo), p.gradient.slice(in_param, hi - lo),
                          m_.slice(in_state, hi - lo), v_.slice(in_state, hi - lo)});
    }
    offset += p.count;
  }
  backend_.adamw_update_batch(segments, c.learning_rate, c.beta1, c.beta2, c.eps, c.weight_decay,
                              step_);
}

}  // namespace whale::exec

// File: adamw.cpp
// AdamW::update: hands the backend every run of the slice, with the matching part of the moment
// buffers, as one batch.
#include "whale/exec/model/adamw.h"

namespace whale::exec {

AdamW::AdamW(Backend& backend, std::vector<ParameterView> params, const AdamWConfig& config,
             std::size_t begin, std::size_t end)
    : SlicedOptimizer(std::move(params), begin, end), backend_(backend), config_(config) {
  m_ = Tensor(backend_, state_count(), DType::fp32);
  v_ = Tensor(backend_, state_count(), DType::fp32);
}

void AdamW::update() {
  std::vector<Backend::AdamwSegment> segments;
  for (const Run& r : runs()) {
    segments.push_back({r.value, r.gradient, m_.slice(r.state_offset, r.value.count),
                        v_.slice(r.state_offset, r.value.count), r.parameter->decayed});
  }
  backend_.adamw_update_batch(segments, config_.learning_rate.at(step_count() - 1), config_.beta1, config_.beta2,
                              config_.eps, config_.weight_decay, step_count());
}

}  // namespace whale::exec

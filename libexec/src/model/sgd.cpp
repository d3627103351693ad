// File: sgd.cpp
// Sgd::update: hands the backend every run of the slice, with the matching part of the
// momentum buffer, as one batch.
#include "whale/exec/model/sgd.h"

namespace whale::exec {

Sgd::Sgd(Backend& backend, std::vector<ParameterView> params, const SgdConfig& config,
         std::size_t begin, std::size_t end)
    : SlicedOptimizer(std::move(params), begin, end), backend_(backend), config_(config) {
  buffer_ = Tensor(backend_, state_count(), DType::fp32);
}

void Sgd::update() {
  std::vector<Backend::SgdSegment> segments;
  for (const Run& r : runs())
    segments.push_back({r.value, r.gradient, buffer_.slice(r.state_offset, r.value.count), r.parameter->decayed});
  backend_.sgd_update_batch(segments, config_.learning_rate.at(step_count() - 1), config_.momentum,
                            config_.weight_decay);
}

}  // namespace whale::exec

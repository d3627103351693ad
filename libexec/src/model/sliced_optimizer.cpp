// File: sliced_optimizer.cpp
// SlicedOptimizer: the slice's bounds and the runs of its trained parameters.
#include "whale/exec/model/sliced_optimizer.h"

#include <algorithm>

namespace whale::exec {

SlicedOptimizer::SlicedOptimizer(std::vector<ParameterView> params, std::size_t begin,
                                 std::size_t end)
    : params_(std::move(params)) {
  for (const ParameterView& p : params_) total_ += p.count;
  end_ = std::min(end, total_);
  begin_ = std::min(begin, end_);
}

std::vector<SlicedOptimizer::Run> SlicedOptimizer::runs() const {
  std::vector<Run> out;
  out.reserve(params_.size());
  std::size_t offset = 0;  // of the current parameter in the concatenation
  for (const ParameterView& p : params_) {
    const std::size_t lo = std::max(begin_, offset), hi = std::min(end_, offset + p.count);
    if (lo < hi && p.trained)  // untrained state keeps its value (and zero optimizer state)
      out.push_back({&p, p.value.slice(lo - offset, hi - lo), p.gradient.slice(lo - offset, hi - lo), lo - begin_});
    offset += p.count;
  }
  return out;
}

}  // namespace whale::exec
